/**
 * `deno task bench`: process start → first "SyncProxyRules complete" of the real program
 * against the test API server (bench/proxy_startup.ts), at 1,000 and 10,000 services, next to
 * its floors: an empty Deno process, and the raw iptables-legacy-restore of the rules the
 * program wrote. Memory and the "lists in" time: scripts/startup_profile.ts. Needs root, socat
 * and iptables-legacy; namespaces `kpf-su-*` are removed when done.
 */
import { rawLegacyRestore } from "./bench_netns.ts";
import {
  createStartupLab,
  emptyDenoMs,
  savedRules,
  startOnce,
  type StartupLab,
} from "./proxy_startup.ts";

function benchStartup(services: number, iterations: number): void {
  const group = `start-up to first sync, ${services.toLocaleString("en-US")} services`;
  let lab: Promise<StartupLab> | undefined;
  let rules: string | undefined;
  const getLab = () => lab ??= createStartupLab(services);
  globalThis.addEventListener("unload", () => {
    lab?.then((l) => l.close());
  });
  const common = { group, n: iterations, warmup: 1 };
  Deno.bench({
    ...common,
    name: "empty Deno process (floor)",
    baseline: true,
    async fn() {
      await emptyDenoMs();
    },
  });
  Deno.bench({
    ...common,
    name: "raw iptables-legacy-restore of the same rules (floor)",
    async fn(b) {
      const l = await getLab();
      rules ??= await (async () => {
        await startOnce(l);
        return await savedRules(l);
      })();
      b.start();
      await rawLegacyRestore(l.ns, rules);
      b.end();
    },
  });
  Deno.bench({
    ...common,
    name: "main.ts -P=proxy --kubeconfig: start → SyncProxyRules complete",
    async fn(b) {
      const l = await getLab();
      b.start();
      await startOnce(l);
      b.end();
    },
  });
}

benchStartup(1_000, 3);
benchStartup(10_000, 2);
