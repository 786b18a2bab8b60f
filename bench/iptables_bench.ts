/**
 * `deno task bench`: our iptables cost against the raw `iptables-legacy-restore` of the very
 * same payload, in one run on one machine. Each group's baseline is the raw restore, so
 * `deno bench` prints how many times slower (or faster) our render and our syncs are.
 *
 * - full, N services: render only (pure), and a full sync through the real proxier in a
 *   throwaway network namespace, vs the raw restore of the payload that sync sends, and that
 *   restore with the two table reads running beside it: the hourly full sync (render, restore;
 *   the canary check after it reads), and one after a flush (saves, parse, render, restore: what
 *   legacy iptables makes such a full sync pay); at 1,000 services also with iptables-nft;
 * - first, N services: a new proxier's first sync on a node with empty tables (start-up on a
 *   new node), vs the raw restore of its payload into the same empty tables;
 * - partial, 1 of 10,000 services: one service's endpoint moves; the proxier's partial sync vs
 *   the raw restore of that partial payload;
 * - render, N services × 10 endpoints: a render with the cache of chain names
 *   a proxier keeps (fitted to the names in use, as the proxier does, and at its fixed default
 *   bound), vs the raw restore of that payload;
 * - partial against upstream's input, both flavours: the same move, the proxier's partial sync
 *   vs the raw restore of the input upstream sends for it (top-level chains and the filter
 *   table rewritten whole on every sync; see upstreamPartialPayload).
 *
 * Needs root, iproute2 and iptables-legacy; namespaces `bn-*` are removed at exit.
 */
import { ChainNameCache } from "../lib/backends/iptables/chain_name_cache.ts";
import { createIptablesProxier } from "../lib/backends/iptables/proxier.ts";
import { type IptablesRenderOptions } from "../lib/backends/iptables/render_options.ts";
import { renderFullRestore } from "../lib/backends/iptables/restore_payload.ts";
import type { ProxyBackend } from "../lib/backends/mod.ts";
import type { CommandRunner } from "../lib/exec/mod.ts";
import type { ProxyState } from "../lib/proxy/mod.ts";
import {
  createBenchNamespace,
  emptyTables,
  natRuleCount,
  netnsRunner,
  rawLegacyRestore,
  rawRestore,
  rawRestoreWithReads,
  upstreamPartialPayload,
} from "./bench_netns.ts";
import { payloadRecorder } from "../tests/support/payload_recorder.ts";
import {
  BENCH_CLUSTER_CIDRS,
  fullSyncState,
  manyEndpointsState,
  oneServiceChangedState,
} from "./cluster_state.ts";

const RENDER_OPTIONS: IptablesRenderOptions = { clusterCIDRs: BENCH_CLUSTER_CIDRS };

/** Runs `make` once, on first use, so setup happens inside the first (untimed) bench call. */
function once<T>(make: () => Promise<T>): () => Promise<T> {
  let value: Promise<T> | undefined;
  return () => (value ??= make());
}

interface SyncLab {
  readonly ns: string;
  readonly proxier: ProxyBackend;
  /** The payloads the proxier sent, for the raw baseline to replay. */
  readonly payloads: readonly string[];
}

function proxierIn(
  ns: string,
  flavour: "legacy" | "nft" = "legacy",
  runner: CommandRunner = netnsRunner(ns),
) {
  const recorder = payloadRecorder(runner);
  const proxier = createIptablesProxier({
    family: "IPv4",
    flavour,
    runner: recorder.run,
    ...RENDER_OPTIONS,
  });
  return { proxier, recorder };
}

async function expectServices(ns: string, n: number): Promise<void> {
  const rules = await natRuleCount(ns, "KUBE-SERVICES");
  if (rules !== n + 1) {
    throw new Error(`Namespace "${ns}" has ${rules} KUBE-SERVICES rules: expected ${n + 1}`);
  }
}

/** A namespace holding N services, synced twice so the recorded full payload is steady-state. */
function fullSyncLab(
  n: number,
  state: ProxyState,
  flavour: "legacy" | "nft",
): () => Promise<SyncLab> {
  return once(async () => {
    const ns = await createBenchNamespace(`full-${flavour}${n}`);
    const { proxier, recorder } = proxierIn(ns, flavour);
    await proxier.sync(state);
    await proxier.sync(state);
    if (flavour === "legacy") await expectServices(ns, n);
    return { ns, proxier, payloads: [recorder.lastRestore()] };
  });
}

/** The two states a partial-sync bench alternates between: svc0's endpoint moves back and forth. */
function movedStates(n: number): ProxyState[] {
  return [oneServiceChangedState(n, "10.99.0.2"), oneServiceChangedState(n, "10.0.0.2")];
}

/**
 * A namespace holding N services (one full sync) plus the two partial payloads that move svc0's
 * endpoint; with `againstUpstream`, the input upstream would send for each move instead.
 */
function partialSyncLab(
  n: number,
  flavour: "legacy" | "nft",
  againstUpstream: boolean,
): () => Promise<SyncLab> {
  return once(async () => {
    const ns = await createBenchNamespace(`${againstUpstream ? "up" : "part"}-${flavour}${n}`);
    const { proxier, recorder } = proxierIn(ns, flavour);
    await proxier.sync(fullSyncState(n));
    const full = recorder.lastRestore();
    const payloads: string[] = [];
    for (const s of movedStates(n)) {
      const report = await proxier.sync(s);
      if (report.full) throw new Error("Expected a partial sync after the first full one");
      const ours = recorder.lastRestore();
      payloads.push(againstUpstream ? upstreamPartialPayload(ours, full) : ours);
    }
    if (flavour === "legacy") await expectServices(ns, n);
    return { ns, proxier, payloads };
  });
}

function benchFull(n: number, iterations: number, flavour: "legacy" | "nft" = "legacy"): void {
  const label = n.toLocaleString("en-US");
  const group = flavour === "legacy"
    ? `full sync, ${label} services`
    : `full sync, iptables-nft, ${label} services`;
  const state = fullSyncState(n);
  const lab = fullSyncLab(n, state, flavour);
  const common = { group, n: iterations, warmup: 1 };
  const tag = flavour === "legacy" ? label : `${label}, nft`;

  Deno.bench({
    ...common,
    name: `iptables-${flavour}-restore, raw (${tag} services)`,
    baseline: true,
    async fn(b) {
      const { ns, payloads } = await lab();
      b.start();
      await rawRestore(ns, payloads[0]!, flavour);
      b.end();
    },
  });
  Deno.bench({
    ...common,
    name: `the same, with the full sync's two table reads beside it (${tag} services)`,
    async fn(b) {
      const { ns, payloads } = await lab();
      b.start();
      await rawRestoreWithReads(ns, payloads[0]!, flavour);
      b.end();
    },
  });
  if (flavour === "legacy") {
    Deno.bench({
      ...common,
      name: `render only (${label} services)`,
      fn(b) {
        b.start();
        renderFullRestore(state, RENDER_OPTIONS);
        b.end();
      },
    });
  }
  Deno.bench({
    ...common,
    name: `proxier full sync (${tag} services)`,
    async fn(b) {
      const { proxier } = await lab();
      b.start();
      await proxier.sync(state);
      b.end();
    },
  });
  Deno.bench({
    ...common,
    name: `proxier full sync after a flush, with its reads (${tag} services)`,
    async fn(b) {
      const { ns, proxier } = await lab();
      await forgetRules(ns, proxier, flavour);
      b.start();
      await proxier.sync(state);
      b.end();
    },
  });
}

/**
 * Deletes the mangle canary (what a firewall reload does first) and lets the proxier's check
 * notice, so its next sync is a full one that reads the tables beside its restore.
 */
async function forgetRules(
  ns: string,
  proxier: ProxyBackend,
  flavour: "legacy" | "nft",
): Promise<void> {
  const run = netnsRunner(ns);
  for (const op of ["-F", "-X"]) {
    const args = ["-w", "5", "-t", "mangle", op, "KUBE-PROXY-CANARY"];
    const out = await run({ cmd: `iptables-${flavour}`, args });
    if (out.code !== 0) throw new Error(`iptables ${args.join(" ")}: ${out.stderr}`);
  }
  if (!(await proxier.rulesFlushed())) throw new Error("The proxier did not see the flush");
}

/**
 * Renders of N services × `each` endpoints with a kept cache of chain names: fitted to the names
 * in use (what the proxier does) and at the cache's fixed default bound (what it did before).
 */
function benchRenderWide(n: number, each: number, iterations: number): void {
  const label = `${n.toLocaleString("en-US")} services × ${each} endpoints`;
  const group = `render, ${label}`;
  const state = manyEndpointsState(n, each);
  const lab = once(async () => {
    const ns = await createBenchNamespace(`wide${n}`);
    const { proxier, recorder } = proxierIn(ns);
    await proxier.sync(state);
    await expectServices(ns, n);
    return { ns, payload: recorder.lastRestore() };
  });
  const fitted = new ChainNameCache();
  fitted.fit(4 * state.services.size + state.totalEndpoints);
  const fixed = new ChainNameCache();
  const common = { group, n: iterations, warmup: 1 };
  Deno.bench({
    ...common,
    name: `iptables-legacy-restore, raw (${label})`,
    baseline: true,
    async fn(b) {
      const { ns, payload } = await lab();
      await emptyTables(ns, "legacy");
      b.start();
      await rawLegacyRestore(ns, payload);
      b.end();
    },
  });
  for (const [how, chainNames] of [["fitted", fitted], ["fixed bound", fixed]] as const) {
    Deno.bench({
      ...common,
      name: `render, cache ${how} (${label})`,
      fn(b) {
        b.start();
        renderFullRestore(state, { ...RENDER_OPTIONS, chainNames });
        b.end();
      },
    });
  }
}

/** A namespace and the payload of a first sync of N services on empty tables. */
function firstSyncLab(n: number, state: ProxyState): () => Promise<SyncLab> {
  return once(async () => {
    const ns = await createBenchNamespace(`first${n}`);
    const { proxier, recorder } = proxierIn(ns);
    await proxier.sync(state);
    await expectServices(ns, n);
    return { ns, proxier, payloads: [recorder.lastRestore()] };
  });
}

function benchFirst(n: number, iterations: number): void {
  const label = n.toLocaleString("en-US");
  const group = `first sync on empty tables, ${label} services`;
  const state = fullSyncState(n);
  const lab = firstSyncLab(n, state);
  const common = { group, n: iterations, warmup: 1 };

  Deno.bench({
    ...common,
    name: `iptables-legacy-restore, raw, empty tables (${label} services)`,
    baseline: true,
    async fn(b) {
      const { ns, payloads } = await lab();
      await emptyTables(ns, "legacy");
      b.start();
      await rawLegacyRestore(ns, payloads[0]!);
      b.end();
    },
  });
  Deno.bench({
    ...common,
    name: `new proxier's first sync, empty tables (${label} services)`,
    async fn(b) {
      const { ns } = await lab();
      await emptyTables(ns, "legacy");
      const { proxier } = proxierIn(ns);
      b.start();
      await proxier.sync(state);
      b.end();
    },
  });
  Deno.bench({
    ...common,
    name: `the same after its start-up reads (${label} services)`,
    async fn(b) {
      const { ns } = await lab();
      await emptyTables(ns, "legacy");
      // As the program starts: prepareFirstSync's reads run while the lists come in.
      const reads: Promise<unknown>[] = [];
      const run = netnsRunner(ns);
      const { proxier } = proxierIn(ns, "legacy", (input) => {
        const out = run(input);
        if (input.cmd.endsWith("-save")) reads.push(out);
        return out;
      });
      proxier.prepareFirstSync!();
      await Promise.all(reads);
      if (reads.length !== 2) throw new Error(`Expected 2 start-up reads, saw ${reads.length}`);
      b.start();
      await proxier.sync(state);
      b.end();
      if (reads.length !== 2) throw new Error(`The first sync read again (${reads.length} reads)`);
    },
  });
}

/**
 * One endpoint moves in N services: the proxier's partial sync vs the raw restore of its own
 * payload, or (`againstUpstream`) of the input upstream would send for the same move.
 */
function benchPartial(
  n: number,
  iterations: number,
  flavour: "legacy" | "nft",
  againstUpstream: boolean,
): void {
  const label = n.toLocaleString("en-US");
  const group = againstUpstream
    ? `partial sync vs upstream's input, iptables-${flavour}, 1 of ${label} services`
    : `partial sync, 1 of ${label} services`;
  const states = movedStates(n);
  const lab = partialSyncLab(n, flavour, againstUpstream);
  const common = { group, n: iterations, warmup: 1 };
  const input = againstUpstream ? ", upstream's input" : "";
  let rawTurn = 0;
  let syncTurn = 0;

  Deno.bench({
    ...common,
    name: `iptables-${flavour}-restore, raw${input} (1 of ${label} services)`,
    baseline: true,
    async fn(b) {
      const { ns, payloads } = await lab();
      const payload = payloads[rawTurn++ % payloads.length]!;
      b.start();
      await rawRestore(ns, payload, flavour);
      b.end();
    },
  });
  Deno.bench({
    ...common,
    name: `proxier partial sync, iptables-${flavour} (1 of ${label} services${
      againstUpstream ? "; vs upstream's input" : ""
    })`,
    async fn(b) {
      const { proxier } = await lab();
      const s = states[syncTurn++ % states.length]!;
      b.start();
      const report = await proxier.sync(s);
      b.end();
      if (report.full) throw new Error("Expected a partial sync, the proxier did a full one");
    },
  });
}

// The 1,000-service groups are quick per iteration and their rows sit near the 1.1x bar, where
// few iterations leave the ratio swinging between runs: 20-30 iterations steady it.
benchFirst(1_000, 30);
benchFull(1_000, 30);
benchFull(1_000, 20, "nft");
benchFirst(10_000, 5);
benchFull(10_000, 5);
benchRenderWide(10_000, 10, 3);
benchPartial(10_000, 10, "legacy", false);
benchPartial(10_000, 10, "legacy", true);
benchPartial(1_000, 10, "nft", true);
benchPartial(10_000, 10, "nft", true);
