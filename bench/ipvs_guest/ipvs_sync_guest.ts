/**
 * Runs INSIDE the IPVS guest (bench/ipvs_bench.ts boots it and runs this file with
 * `deno bench`): IPVS mode's sync against the raw batch apply of the very same payload, in the
 * guest's root network namespace (the guest is alone, and `ip netns exec` would add a process
 * per command to one side only). Named `*_guest.ts` so the host's `deno bench bench/` skips it.
 *
 * - full sync from empty, N services × 10 endpoints: the real proxier (reads `ip addr`,
 *   `ipset save`, `ipvsadm -Ln`, `iptables-save`; desired state; diffs; batched writes) vs the
 *   raw `ipset restore` + `ipvsadm -R` + `ip -batch` (kube-ipvs0 and its addresses) +
 *   `iptables-restore` of what that sync wrote, in the proxier's order;
 * - one endpoint changed at that size: the proxier's partial sync (no reads: it diffs the
 *   changed port against what the last full sync read and the writes since left) vs the raw
 *   replay of what it wrote.
 *
 * IPVS_BENCH_SCALE (default 1: 10,000 services, the full case) scales the services;
 * IPVS_BENCH_RUNS (default 2) is the iterations of each full-sync case; the one-endpoint
 * cases run at least 20 times (setup has already synced four times, so nothing runs cold).
 */
import { createIpvsProxier } from "../../lib/backends/ipvs/proxier.ts";
import { KUBE_IPVS_DEVICE } from "../../lib/backends/ipvs/cleanup.ts";
import { type CommandInput, type CommandRunner, denoCommandRunner } from "../../lib/exec/mod.ts";
import { firstEndpointMoved, scaleState } from "../nftables_scale_state.ts";
import {
  countVirtualServers,
  ipvsWrites,
  rawApply,
  requireIpvsKernel,
  resetIpvsNode,
} from "./ipvs_node.ts";

const SCALE = Number(Deno.env.get("IPVS_BENCH_SCALE") ?? "1");
const RUNS = Number(Deno.env.get("IPVS_BENCH_RUNS") ?? "2");
const ENDPOINTS = 10;
const N = Math.max(1, Math.round(10_000 * SCALE));
const LABEL = `${N.toLocaleString("en-US")} × ${ENDPOINTS}`;
/** Node addresses for the NodePort virtual servers (every tenth service has a NodePort). */
const OPTIONS = { clusterCIDRs: ["10.0.0.0/8"], nodeAddresses: ["192.168.0.2"] };

/** Runs `make` once, on first use, so setup happens inside the first (untimed) bench call. */
function once<T>(make: () => Promise<T>): () => Promise<T> {
  let value: Promise<T> | undefined;
  return () => (value ??= make());
}

/** A runner that keeps every command the proxier ran, to replay its writes raw. */
function recording(): { run: CommandRunner; take(): CommandInput[] } {
  let seen: CommandInput[] = [];
  return {
    run: (input) => {
      seen.push(input);
      return denoCommandRunner(input);
    },
    take: () => {
      const out = seen;
      seen = [];
      return out;
    },
  };
}

function proxier(run: CommandRunner) {
  return createIpvsProxier({ family: "IPv4", flavour: "legacy", runner: run, ...OPTIONS });
}

const state = scaleState(N, ENDPOINTS);
/** Virtual servers the state needs: one per ClusterIP, one more per NodePort. */
const EXPECTED_VS = N + Math.ceil(N / 10);

const fullLab = once(async () => {
  await requireIpvsKernel();
  await resetIpvsNode();
  const rec = recording();
  await proxier(rec.run).sync(state);
  const vs = await countVirtualServers();
  if (vs !== EXPECTED_VS) {
    throw new Error(`Proxier made ${vs} virtual servers: expected ${EXPECTED_VS}`);
  }
  const writes = ipvsWrites(rec.take(), { createDevice: true });
  await resetIpvsNode();
  await rawApply(writes);
  const raw = await countVirtualServers();
  if (raw !== EXPECTED_VS) {
    throw new Error(`Raw apply made ${raw} virtual servers: expected ${EXPECTED_VS}`);
  }
  return writes;
});

const fullGroup = `ipvs full sync from empty, ${LABEL}`;
Deno.bench({
  group: fullGroup,
  n: RUNS,
  warmup: 0,
  name: `raw ipset restore + ipvsadm -R + ip -batch + iptables-restore (${LABEL})`,
  baseline: true,
  async fn(b) {
    const writes = await fullLab();
    await resetIpvsNode();
    b.start();
    await rawApply(writes);
    b.end();
  },
});
Deno.bench({
  group: fullGroup,
  n: RUNS,
  warmup: 0,
  name: `proxier full sync from empty (${LABEL})`,
  async fn(b) {
    await fullLab();
    await resetIpvsNode();
    const p = proxier(denoCommandRunner);
    b.start();
    await p.sync(state);
    b.end();
  },
});

// One endpoint of svc0 moves back and forth in one kernel. A partial sync does not read the
// counts of the real server it removes, so it drains it (weight 0); moving back restores it
// (delete and re-add, as upstream). From the second move on, the two transitions repeat:
// each raw iteration replays what the proxier wrote for the transition the kernel is due.
const partLab = once(async () => {
  await fullLab();
  await resetIpvsNode();
  const rec = recording();
  let dry = false;
  const ok = { code: 0, stdout: "", stderr: "" };
  const p = proxier((input) => dry ? Promise.resolve(ok) : rec.run(input));
  await p.sync(state);
  const a = firstEndpointMoved(state, ENDPOINTS, "10.255.255.2");
  const b = firstEndpointMoved(a, ENDPOINTS, "10.255.255.1");
  await p.sync(a);
  rec.take();
  await p.sync(b);
  const toB = ipvsWrites(rec.take(), { createDevice: false });
  await p.sync(a);
  const toA = ipvsWrites(rec.take(), { createDevice: false });
  // Against the real kernel at full size, the diff must touch exactly the moved real servers,
  // on svc0's ClusterIP and on its NodePort (every tenth service has one), and write nothing
  // but `ipvsadm -R`.
  const moves = [["10.255.255.1", "10.255.255.2"], ["10.255.255.2", "10.255.255.1"]];
  [toA, toB].forEach((w, i) => {
    const [from, to] = moves[i]!;
    const want = ["172.30.0.0:80", "192.168.0.2:30000"].flatMap((vs) => [
      `-d -t ${vs} -r ${to}:8080`,
      `-a -t ${vs} -r ${to}:8080 -m -w 1`,
      `-e -t ${vs} -r ${from}:8080 -m -w 0`,
    ]).sort();
    const got = w.ipvsadmRestore.trim().split("\n").sort();
    if (JSON.stringify(got) !== JSON.stringify(want) || w.ipsetRestore || w.iptablesRestore) {
      throw new Error(`One-endpoint sync wrote ${JSON.stringify(w)}: expected ${want}`);
    }
  });
  return {
    p,
    states: [a, b] as const,
    writes: [toA, toB] as const,
    /** Which state the kernel holds, and which one the proxier last synced to. */
    at: 0,
    proxierAt: 0,
    /** Moves the proxier's view to what the kernel holds without writing (raw replays did). */
    async catchUp(this: { at: number; proxierAt: number }) {
      if (this.proxierAt === this.at) return;
      dry = true;
      await p.sync([a, b][this.at]!);
      dry = false;
      this.proxierAt = this.at;
    },
  };
});

/** One-endpoint iterations: a process start under TCG varies by ±50 ms, so take many. */
const PART_RUNS = Math.max(20, 2 * RUNS);
const partGroup = `ipvs one endpoint changed, ${LABEL}`;
Deno.bench({
  group: partGroup,
  n: PART_RUNS,
  warmup: 0,
  name: `raw replay of the change (${LABEL}, one endpoint)`,
  baseline: true,
  async fn(b) {
    const lab = await partLab();
    const next = 1 - lab.at;
    b.start();
    await rawApply(lab.writes[next]!);
    b.end();
    lab.at = next;
  },
});
Deno.bench({
  group: partGroup,
  n: PART_RUNS,
  warmup: 0,
  name: `proxier sync (${LABEL}, one endpoint)`,
  async fn(b) {
    const lab = await partLab();
    await lab.catchUp();
    const next = 1 - lab.at;
    b.start();
    const report = await lab.p.sync(lab.states[next]!);
    b.end();
    if (report.full) throw new Error("The one-endpoint sync was full");
    lab.at = lab.proxierAt = next;
  },
});

globalThis.addEventListener("unload", () => {
  // Leave the guest as found: no virtual servers, sets, chains or kube-ipvs0.
  new Deno.Command("ipvsadm", { args: ["-C"] }).outputSync();
  new Deno.Command("ip", { args: ["link", "del", KUBE_IPVS_DEVICE], stderr: "null" })
    .outputSync();
});
