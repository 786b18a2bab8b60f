/**
 * `deno task bench`: process start → first "SyncProxyRules complete" of the real program
 * against the test API server (bench/proxy_startup.ts), at 1,000 and 10,000 services, next to
 * its floors: an empty Deno process, and the raw iptables-restore of the rules the program
 * wrote. On a node marked iptables-legacy, and (1,000 services) on one marked iptables-nft; at
 * 10,000 services also on a new node (empty tables), against the raw restore from a file.
 * Memory and the "lists in" time: scripts/startup_profile.ts. Needs root, socat, iptables-legacy
 * and iptables-nft; namespaces `kpf-su-*` are removed when done.
 */
import { rawRestore, rawRestoreFromFile } from "./bench_netns.ts";
import {
  createStartupLab,
  emptyDenoMs,
  emptyNodeTables,
  savedRules,
  startOnce,
  type StartupLab,
} from "./proxy_startup.ts";

function benchStartup(services: number, iterations: number, flavour: "legacy" | "nft"): void {
  const label = services.toLocaleString("en-US");
  const group = `start-up to first sync, ${label} services, iptables-${flavour}`;
  let lab: Promise<StartupLab> | undefined;
  let rules: string | undefined;
  const getLab = () => lab ??= createStartupLab(services, flavour);
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
    name: `raw iptables-${flavour}-restore of the same rules (floor)`,
    async fn(b) {
      const l = await getLab();
      rules ??= await (async () => {
        await startOnce(l);
        return await savedRules(l);
      })();
      b.start();
      await rawRestore(l.ns, rules, flavour);
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

/**
 * Start-up on a new node (empty tables, only kubelet's hint chain), as upstream is measured:
 * process start → first complete sync, against the raw iptables-legacy-restore of the same rules
 * (as iptables-save prints them) from a file, into empty tables, in the same run.
 */
function benchFreshStartup(services: number, iterations: number): void {
  const label = services.toLocaleString("en-US");
  const group = `start-up on a new node, ${label} services, iptables-legacy`;
  let lab: Promise<StartupLab> | undefined;
  let file: string | undefined;
  const getLab = () => lab ??= createStartupLab(services, "legacy");
  globalThis.addEventListener("unload", () => {
    lab?.then((l) => l.close());
    if (file !== undefined) Deno.removeSync(file);
  });
  const common = { group, n: iterations, warmup: 1 };
  Deno.bench({
    ...common,
    name: "raw iptables-legacy-restore < file of the same rules, empty tables (floor)",
    baseline: true,
    async fn(b) {
      const l = await getLab();
      file ??= await (async () => {
        await startOnce(l);
        const path = await Deno.makeTempFile({ prefix: "kube-proxy-rules-" });
        await Deno.writeTextFile(path, await savedRules(l));
        return path;
      })();
      await emptyNodeTables(l);
      b.start();
      await rawRestoreFromFile(l.ns, file, "legacy");
      b.end();
    },
  });
  Deno.bench({
    ...common,
    name: "main.ts -P=proxy --kubeconfig, empty tables: start → SyncProxyRules complete",
    async fn(b) {
      const l = await getLab();
      await emptyNodeTables(l);
      b.start();
      await startOnce(l);
      b.end();
    },
  });
}

benchStartup(1_000, 3, "legacy");
benchStartup(10_000, 2, "legacy");
benchFreshStartup(10_000, 3);
// iptables-nft at 1,000 services only: at 10,000 services x 10 endpoints iptables-nft-restore
// alone takes minutes.
benchStartup(1_000, 3, "nft");
