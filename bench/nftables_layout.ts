/**
 * Measures our nftables layout with raw `nft -f` in a throwaway network namespace (root
 * needed): cold load of N services × M endpoints, then one endpoint replaced (partial
 * transaction from the table store). Usage: `deno run -A bench/nftables_layout.ts 10000 10`.
 */
import { createNftablesProxier } from "../lib/backends/nftables/proxier.ts";
import { fullTransaction } from "../lib/backends/nftables/transaction.ts";
import { newNftTableStore, updateNftTableStore } from "../lib/backends/nftables/render.ts";
import { resolveNftRenderConfig } from "../lib/backends/nftables/render_options.ts";
import process from "node:process";
import { type CommandRunner, denoCommandRunner } from "../lib/exec/mod.ts";
import { firstEndpointMoved, scaleState } from "./nftables_scale_state.ts";

const n = Number(Deno.args[0] ?? 1000);
const m = Number(Deno.args[1] ?? 10);
const ns = `knl-layout-${Deno.pid}`;

/** Runs `nft -f -` in the namespace; returns wall ms and nft's own CPU ms (user + sys). */
async function nft(stdin: string): Promise<string> {
  const t0 = performance.now();
  const child = new Deno.Command("/usr/bin/time", {
    args: ["-f", "CPU %U %S", "ip", "netns", "exec", ns, "nft", "-f", "-"],
    stdin: stdin === undefined ? "null" : "piped",
    stdout: "null",
    stderr: "piped",
  }).spawn();
  if (stdin !== undefined) {
    const w = child.stdin.getWriter();
    await w.write(new TextEncoder().encode(stdin));
    await w.close();
  }
  const out = await child.output();
  const err = new TextDecoder().decode(out.stderr);
  if (out.code !== 0) throw new Error(err.slice(0, 2000));
  const m = /CPU ([\d.]+) ([\d.]+)/.exec(err)!;
  const cpu = (Number(m[1]) + Number(m[2])) * 1000;
  return `${(performance.now() - t0).toFixed(0)} ms wall / ${cpu.toFixed(0)} ms CPU`;
}

/** Wall and CPU ms of this process since `t0` / `c0`. */
function since(t0: number, c0: NodeJS.CpuUsage): string {
  const c = process.cpuUsage(c0);
  return `${(performance.now() - t0).toFixed(1)} ms wall / ${
    ((c.user + c.system) / 1000).toFixed(1)
  } ms CPU`;
}

await new Deno.Command("ip", { args: ["netns", "add", ns] }).output();
try {
  const s1 = scaleState(n, m);
  let t0 = performance.now();
  let c0 = process.cpuUsage();
  const config = resolveNftRenderConfig(s1, { clusterCIDRs: ["10.0.0.0/8"] });
  const store = newNftTableStore(config);
  store.suspendTracking();
  updateNftTableStore(store, s1, config, true);
  const model = store.view();
  store.markWritten();
  const tx1 = fullTransaction(model);
  const tRender = since(t0, c0);
  const tLoad = await nft(tx1.script);
  console.log(
    `${n}x${m}: render+script ${tRender}, nft -f full ${tLoad},` +
      ` ${
        (tx1.script.length / 1e6).toFixed(1)
      } MB, chains ${model.chains.size}, sets ${model.sets.size}`,
  );
  let prev = s1;
  for (const ip of ["10.255.255.2", "10.255.255.3"]) {
    const s2 = firstEndpointMoved(prev, m, ip);
    t0 = performance.now();
    c0 = process.cpuUsage();
    updateNftTableStore(store, s2, config, false);
    const tx2 = store.takeTransaction()!;
    const tRender2 = since(t0, c0);
    const tLoad2 = await nft(tx2.script);
    console.log(
      `one endpoint: render+diff ${tRender2}, nft -f partial ${tLoad2}: ` +
        JSON.stringify({ ...tx2, script: tx2.script.length }),
    );
    prev = s2;
  }
  // Restart: a proxier writes the table (stamped), then a new one adopts it unwritten.
  const runner: CommandRunner = (input) =>
    denoCommandRunner({
      ...input,
      cmd: "ip",
      args: ["netns", "exec", ns, input.cmd, ...input.args],
    });
  const full = { ...prev, forceFullSync: true };
  t0 = performance.now();
  c0 = process.cpuUsage();
  await createNftablesProxier({ family: "IPv4", runner, clusterCIDRs: ["10.0.0.0/8"] }).sync(full);
  console.log(
    `proxier full sync over the existing table: ${since(t0, c0)} (ours; nft excluded from CPU)`,
  );
  t0 = performance.now();
  c0 = process.cpuUsage();
  const r = await createNftablesProxier({ family: "IPv4", runner, clusterCIDRs: ["10.0.0.0/8"] })
    .sync(full);
  console.log(`restart, table already correct: adopted=${r.adopted} in ${since(t0, c0)}`);
} finally {
  await new Deno.Command("ip", { args: ["netns", "del", ns] }).output();
}
