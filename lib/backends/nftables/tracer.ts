/**
 * The nftables-mode tracer: its rules are the `kube-proxy` table of one family as an
 * NftTableModel, either rendered by lib/backends/nftables for a state or read from the kernel
 * with `nft list table <family> kube-proxy` (text, parsed by table_text.ts, so the evaluator
 * reads one rule syntax; nft's JSON would need a second evaluator).
 */
import type { ProxyConfig } from "../../config/mod.ts";
import { nftablesRenderOptions } from "./render_options.ts";
import { NFT_TABLE } from "./_names.ts";
import { renderNftables } from "./render.ts";
import { type NftTableModel } from "./table_model.ts";
import { type CommandRunner, runChecked } from "../../exec/mod.ts";
import type { IPFamily, ProxyState } from "../../proxy/mod.ts";
import type { TracePacket, TraceResult } from "../../trace/mod.ts";
import type { ModeTracer, TraceNode } from "../../trace/mod.ts";
import { decideNft } from "./_trace_decide.ts";
import { parseNftTableListing } from "./_trace_table_text.ts";
import { type NftBranch, NftWalker } from "./_trace_walk.ts";

/** Reads the family's `kube-proxy` table with a read-only `nft list table`. */
export async function readNftTable(
  runner: CommandRunner,
  family: IPFamily,
): Promise<NftTableModel> {
  const nftFamily = family === "IPv4" ? "ip" : "ip6";
  const text = await runChecked(runner, {
    cmd: "nft",
    args: ["list", "table", nftFamily, NFT_TABLE],
  });
  return parseNftTableListing(text);
}

/**
 * Follows a new connection: pod and external traffic enters prerouting, then input when its
 * (translated) destination is local, else forward and postrouting; node traffic enters output
 * and postrouting, and, when it stays on the node, the filter chains of prerouting and input.
 */
export function traceNftables(
  table: NftTableModel,
  packet: TracePacket,
  node: TraceNode,
): TraceResult {
  const w = new NftWalker(table, packet, node);
  let out: NftBranch[] = [];
  if (packet.source === "node") {
    const sent = w.runHook("postrouting", w.runHook("output", [w.start()]));
    const local = sent.filter((b) => b.stop === null && w.isLocal(b.daddr));
    out = sent.filter((b) => !local.includes(b));
    if (local.length > 0) out.push(...w.runHook("input", w.runHook("prerouting", local, true)));
  } else {
    const routed = w.runHook("prerouting", [w.start()]);
    const local = routed.filter((b) => b.stop === null && w.isLocal(b.daddr));
    const forward = routed.filter((b) => !local.includes(b));
    out.push(...w.runHook("input", local));
    const live = forward.filter((b) => b.stop === null);
    out.push(...forward.filter((b) => b.stop !== null));
    out.push(...w.runHook("postrouting", w.runHook("forward", live)));
  }
  return decideNft(out);
}

/** The nftables mode's tracer. */
export const nftablesTracer: ModeTracer<NftTableModel> = {
  read: readNftTable,
  rendered(config: ProxyConfig, state: ProxyState): NftTableModel {
    return renderNftables(state, nftablesRenderOptions(config, state.family)).model;
  },
  trace: traceNftables,
};
