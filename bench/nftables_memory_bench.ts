/**
 * `deno task bench`, nftables group: the real program's start-up to its first complete sync
 * and its resident memory, nftables mode against iptables mode (the baseline) at the same size
 * (10,000 services × 10 endpoints against the test API server, bench/proxy_startup.ts). Each
 * run prints the settled and peak RSS (the bar: nftables mode's must not exceed iptables').
 * NFT_BENCH_SCALE (default 1) scales the service count down. Needs root, socat, iproute2,
 * iptables-legacy and nft; the namespace `kpf-su-<n>` is removed when done.
 */
import { createStartupLab, startOnce, type StartupLab } from "./proxy_startup.ts";

const SCALE = Number(Deno.env.get("NFT_BENCH_SCALE") ?? "1");
const services = Math.max(1, Math.round(10_000 * SCALE));
const group = `start-up and memory by mode, ${services.toLocaleString("en-US")} services × 10`;
let lab: Promise<StartupLab> | undefined;
const getLab = () => lab ??= createStartupLab(services);
globalThis.addEventListener("unload", () => {
  lab?.then((l) => l.close());
});

for (const mode of ["iptables", "nftables"] as const) {
  Deno.bench({
    group,
    n: 1,
    warmup: 0,
    name: `main.ts --proxy-mode=${mode}: start → SyncProxyRules complete`,
    baseline: mode === "iptables",
    async fn(b) {
      const l = await getLab();
      // Every run starts cold: a table left by the previous nftables run would be adopted.
      for (const family of ["ip", "ip6"]) {
        await new Deno.Command("ip", {
          args: ["netns", "exec", l.ns, "nft", "delete", "table", family, "kube-proxy"],
          stderr: "null",
        }).output();
      }
      b.start();
      const f = await startOnce(l, 0, 0, [`--proxy-mode=${mode}`], 600_000);
      b.end();
      console.log(
        `${mode}: first sync ${(f.completeMs / 1000).toFixed(2)} s, RSS at first sync ` +
          `${(f.settledRssKb / 1024).toFixed(0)} MB, peak ${(f.peakRssKb / 1024).toFixed(0)} MB`,
      );
    },
  });
}
