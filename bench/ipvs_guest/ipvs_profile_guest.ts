/**
 * Runs INSIDE the IPVS guest: where one IPVS sync spends its time. Does a full sync from
 * empty and then one-endpoint syncs, printing each command the proxier ran with its wall time
 * and the time spent in our own code between commands. For profiling, not a benchmark:
 *
 *   deno run -A scripts/ipvs_vm/main.ts -- deno run -A --no-check bench/ipvs_guest/ipvs_profile_guest.ts
 *
 * IPVS_BENCH_SCALE as in ipvs_sync_guest.ts (default 1: 10,000 services × 10 endpoints);
 * IPVS_PROFILE_MOVES one-endpoint syncs (default 2).
 */
import { createIpvsProxier } from "../../lib/backends/ipvs/proxier.ts";
import { type CommandRunner, denoCommandRunner } from "../../lib/exec/mod.ts";
import { firstEndpointMoved, scaleState } from "../nftables_scale_state.ts";
import { requireIpvsKernel, resetIpvsNode } from "./ipvs_node.ts";

const SCALE = Number(Deno.env.get("IPVS_BENCH_SCALE") ?? "1");
const N = Math.max(1, Math.round(10_000 * SCALE));
const OPTIONS = { clusterCIDRs: ["10.0.0.0/8"], nodeAddresses: ["192.168.0.2"] };

let mark = performance.now();
const timed: CommandRunner = async (input) => {
  const ours = performance.now() - mark;
  const t0 = performance.now();
  const out = await denoCommandRunner(input);
  const took = performance.now() - t0;
  const size = `${input.stdin?.length ?? 0} B in, ${out.stdout.length} B out`;
  console.log(
    `  ours ${ours.toFixed(0).padStart(6)} ms | ${took.toFixed(0).padStart(6)} ms ${input.cmd} ${
      input.args.join(" ")
    } (${size})`,
  );
  mark = performance.now();
  return out;
};

await requireIpvsKernel();
await resetIpvsNode();
const proxier = createIpvsProxier({
  family: "IPv4",
  flavour: "legacy",
  runner: timed,
  ...OPTIONS,
});
let state = scaleState(N, 10);
const runs: [string, typeof state][] = [["full sync from empty", state]];
// IPVS_PROFILE_MOVES (default 2) one-endpoint syncs, back and forth.
const MOVES = Number(Deno.env.get("IPVS_PROFILE_MOVES") ?? "2");
for (let i = 0; i < MOVES; i++) {
  const ip = i % 2 === 0 ? "10.255.255.2" : "10.255.255.1";
  state = firstEndpointMoved(state, 10, ip);
  runs.push([`one endpoint -> ${ip}`, state]);
}
for (const [what, s] of runs) {
  console.log(`${what}, ${N} × 10:`);
  const t0 = performance.now();
  mark = t0;
  await proxier.sync(s);
  const tail = performance.now() - mark;
  console.log(`  ours ${tail.toFixed(0).padStart(6)} ms | (end)`);
  console.log(`  total ${(performance.now() - t0).toFixed(0)} ms`);
}
await resetIpvsNode();
