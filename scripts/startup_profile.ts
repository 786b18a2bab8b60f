/**
 * Report (not a test): the program's start-up and memory at 1,000 and 10,000 services against
 * the test API server, one run each, next to the floors (an empty Deno process, the raw
 * iptables-legacy-restore of the rules it wrote); resident memory counts the pages of Deno's
 * caches that `deno run` maps (a compiled binary maps none), shown apart. Then, in a second
 * run, its memory under steady churn: CHURN_CHANGES (default 40) EndpointSlice changes 1.1 s
 * apart (bench/proxy_churn.ts).
 * `deno run -A scripts/startup_profile.ts [N...]`
 * as root. Namespaces `kpf-su-*` are removed when done.
 */
import { rawLegacyRestore } from "../bench/bench_netns.ts";
import { churnOnce } from "../bench/proxy_churn.ts";
import { createStartupLab, emptyDenoMs, savedRules, startOnce } from "../bench/proxy_startup.ts";

/** How long the settled program is watched for idle CPU. */
const IDLE_MS = 60_000;
const sizes = Deno.args.length > 0 ? Deno.args.map(Number) : [1_000, 10_000];
const CHURN_CHANGES = Number(Deno.env.get("CHURN_CHANGES") ?? 40);
const rows: string[] = [];
const churnRows: string[] = [];
const mb = (kb: number) => (kb / 1024).toFixed(1);
for (const n of sizes) {
  const lab = await createStartupLab(n);
  try {
    const f = await startOnce(lab, 5_000, IDLE_MS);
    const rules = await savedRules(lab);
    const t = performance.now();
    await rawLegacyRestore(lab.ns, rules);
    const restoreMs = performance.now() - t;
    const empty = await emptyDenoMs();
    rows.push(
      `| ${n} | ${f.listsMs.toFixed(0)} | ${f.completeMs.toFixed(0)} | ${empty.toFixed(0)} | ` +
        `${restoreMs.toFixed(0)} | ${mb(f.settledRssKb)} | ${mb(f.peakRssKb)} | ` +
        `${mb(f.denoDirRssKb)} | ` +
        `${f.idleCpuMs} |`,
    );
    const c = await churnOnce(lab, CHURN_CHANGES);
    churnRows.push(
      `| ${n} | ${c.changes} | ${c.medianLatencyMs.toFixed(0)} | ${c.ownCpuMs} | ` +
        `${c.childrenCpuMs} | ${mb(c.churnPeakRssKb)} | ${mb(c.rssKb)} | ${mb(c.peakRssKb)} |`,
    );
  } finally {
    await lab.close();
  }
}
console.log(
  "| services | start → lists in (ms) | start → SyncProxyRules complete (ms) | empty Deno (ms) | " +
    "raw restore (ms) | RSS settled 5 s (MB) | peak RSS (MB) | of which DENO_DIR's caches (MB) | " +
    "CPU in 60 s idle (ms) |\n" +
    "|---|---|---|---|---|---|---|---|---|",
);
console.log(rows.join("\n"));
console.log(
  "\n| services | changes 1.1 s apart | change → complete, median (ms) | own CPU (ms) | " +
    "children's CPU (ms) | highest RSS after a sync (MB) | RSS at the end (MB) | peak RSS (MB) |\n" +
    "|---|---|---|---|---|---|---|---|",
);
console.log(churnRows.join("\n"));
