/**
 * `deno task bench`, nftables group: our nftables sync against the raw `nft -f` of the very
 * same script, in one run on one machine (each group's baseline is the raw `nft -f`):
 * - cold full sync of 10,000 services × 10 endpoints and of 5,000 × 50 (250,000 endpoints),
 *   from an empty namespace: the proxier (render + transaction + nft) vs raw nft, and the
 *   render alone;
 * - one endpoint changed at either size: the proxier's partial sync vs raw nft of that script.
 * Bars: cold ≤ 3 s and ≤ 10 s; one endpoint ≤ 100 ms.
 * NFT_BENCH_SCALE (default 1) scales the service counts down for a quick check.
 * Needs root, iproute2 and nft; namespaces `knl-bench-*` are removed at exit.
 */
import { createNftablesProxier, type NftablesProxier } from "../lib/backends/nftables/proxier.ts";
import { renderNftables } from "../lib/backends/nftables/render.ts";
import { type CommandRunner, denoCommandRunner } from "../lib/exec/mod.ts";
import { firstEndpointMoved, scaleState } from "./nftables_scale_state.ts";

const SCALE = Number(Deno.env.get("NFT_BENCH_SCALE") ?? "1");
const OPTIONS = { clusterCIDRs: ["10.0.0.0/8"] };
const created = new Set<string>();

globalThis.addEventListener("unload", () => {
  for (const ns of created) {
    new Deno.Command("ip", { args: ["netns", "del", ns], stderr: "null" }).outputSync();
  }
});

async function namespace(suffix: string): Promise<string> {
  const ns = `knl-bench-${suffix}`;
  await new Deno.Command("ip", { args: ["netns", "del", ns], stderr: "null" }).output();
  const out = await new Deno.Command("ip", { args: ["netns", "add", ns] }).output();
  if (out.code !== 0) throw new Error(`Cannot create namespace "${ns}": are you root?`);
  created.add(ns);
  return ns;
}

/** A runner inside `ns` that remembers the last `nft -f` script. */
function recordingRunner(ns: string): { run: CommandRunner; last: () => string } {
  let last = "";
  const run: CommandRunner = (input) => {
    if (input.stdin !== undefined) last = input.stdin;
    return denoCommandRunner({
      ...input,
      cmd: "ip",
      args: ["netns", "exec", ns, input.cmd, ...input.args],
    });
  };
  return { run, last: () => last };
}

async function nftIn(ns: string, args: string[], stdin?: string): Promise<void> {
  const out = await denoCommandRunner({
    cmd: "ip",
    args: ["netns", "exec", ns, "nft", ...args],
    ...(stdin === undefined ? {} : { stdin }),
  });
  if (out.code !== 0 && args[0] !== "delete") {
    throw new Error(`nft ${args.join(" ")}: ${out.stderr.slice(0, 500)}`);
  }
}

function once<T>(make: () => Promise<T>): () => Promise<T> {
  let value: Promise<T> | undefined;
  return () => (value ??= make());
}

function benchSize(services: number, endpoints: number): void {
  const n = Math.max(1, Math.round(services * SCALE));
  const label = `${n.toLocaleString("en-US")} × ${endpoints}`;
  const state = scaleState(n, endpoints);
  const fullLab = once(async () => {
    const ns = await namespace(`full-${n}-${endpoints}`);
    const rec = recordingRunner(ns);
    await createNftablesProxier({ family: "IPv4", runner: rec.run, ...OPTIONS }).sync(state);
    return { ns, rec, script: rec.last() };
  });
  const group = `nftables cold full sync, ${label}`;
  const common = { group, n: 2, warmup: 0 };
  Deno.bench({
    ...common,
    name: `nft -f, raw (${label})`,
    baseline: true,
    async fn(b) {
      const { ns, script } = await fullLab();
      await nftIn(ns, ["delete", "table", "ip", "kube-proxy"]);
      b.start();
      await nftIn(ns, ["-f", "-"], script);
      b.end();
    },
  });
  Deno.bench({
    ...common,
    name: `render only (${label})`,
    fn(b) {
      b.start();
      renderNftables(state, OPTIONS);
      b.end();
    },
  });
  Deno.bench({
    ...common,
    name: `proxier restart onto the correct table (${label})`,
    async fn(b) {
      // The table a previous process left is exactly this render: adopted, nothing written,
      // so no packet can be dropped (the kernel's table is never touched).
      const { ns } = await fullLab();
      const rec = recordingRunner(ns);
      const before = rec.last();
      const proxier = createNftablesProxier({ family: "IPv4", runner: rec.run, ...OPTIONS });
      b.start();
      const report = await proxier.sync(state);
      b.end();
      if (!report.adopted || rec.last() !== before) throw new Error("Expected an adoption");
    },
  });
  Deno.bench({
    ...common,
    name: `proxier full sync from empty (${label})`,
    async fn(b) {
      const { ns, rec } = await fullLab();
      await nftIn(ns, ["delete", "table", "ip", "kube-proxy"]);
      const proxier = createNftablesProxier({ family: "IPv4", runner: rec.run, ...OPTIONS });
      b.start();
      await proxier.sync(state);
      b.end();
    },
  });

  // One endpoint of svc0 moves back and forth: the proxier in one namespace, and the raw
  // replay of its two (mutually inverse) partial scripts in another.
  const partLab = once(async () => {
    const ns = await namespace(`part-${n}-${endpoints}`);
    const rec = recordingRunner(ns);
    const proxier: NftablesProxier = createNftablesProxier({
      family: "IPv4",
      runner: rec.run,
      ...OPTIONS,
    });
    await proxier.sync(state);
    const full = rec.last();
    const a = firstEndpointMoved(state, endpoints, "10.255.255.2");
    const b = firstEndpointMoved(a, endpoints, "10.255.255.1");
    const scripts: string[] = [];
    for (const s of [a, b]) {
      if ((await proxier.sync(s)).full) throw new Error("Expected a partial sync");
      scripts.push(rec.last());
    }
    const rawNs = await namespace(`raw-${n}-${endpoints}`);
    await nftIn(rawNs, ["-f", "-"], full);
    return { rawNs, proxier, states: [a, b], scripts };
  });
  let rawFlip = 0;
  let flip = 0;
  const partGroup = `nftables one endpoint changed, ${label}`;
  Deno.bench({
    group: partGroup,
    n: 10,
    warmup: 2,
    name: `nft -f, raw (${label}, one endpoint)`,
    baseline: true,
    async fn(b) {
      const { rawNs, scripts } = await partLab();
      const script = scripts[rawFlip++ % 2]!;
      b.start();
      await nftIn(rawNs, ["-f", "-"], script);
      b.end();
    },
  });
  Deno.bench({
    group: partGroup,
    n: 10,
    warmup: 2,
    name: `proxier partial sync (${label}, one endpoint)`,
    async fn(b) {
      const { proxier, states } = await partLab();
      const next = states[flip++ % 2]!;
      b.start();
      const report = await proxier.sync(next);
      b.end();
      if (report.full) throw new Error("Expected a partial sync");
    },
  });
}

benchSize(10_000, 10);
benchSize(5_000, 50);
