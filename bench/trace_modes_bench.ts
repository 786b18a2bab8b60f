/**
 * `deno task bench`, trace group: what one `trace` costs in nftables and IPVS mode over the
 * rules of 2,000 generated service ports, against the reference model's decision for the same
 * packet and state in the same run (the baseline: a lookup in the ProxyState). Each traced
 * iteration starts cold, as the CLI does: the nftables rules are parsed on first use, the IPVS
 * texts (`ipvsadm -Sn`, `ipset save`, `iptables-save`) are parsed from scratch. The rules are
 * rendered once, outside the timing. Pure: needs no root.
 */
import { MODE_CONFIG_SECTIONS } from "../lib/backends/mod.ts";
import { defaultConfig } from "../lib/config/mod.ts";
import { modelDecision, modelOptions } from "../lib/trace/mod.ts";
import { ipvsTracer } from "../lib/backends/ipvs/tracer.ts";
import { nftablesTracer } from "../lib/backends/nftables/tracer.ts";
import { familyPlan, generatePackets, generateState } from "../tests/support/trace_states.ts";

const SIZE = 2000;
const config = {
  ...defaultConfig({ modeSections: MODE_CONFIG_SECTIONS }),
  clusterCIDRs: ["10.0.0.0/8"],
};
const state = generateState(7, SIZE, "IPv4");
const plan = familyPlan("IPv4");
const node = { localAddresses: [plan.nodeIP, plan.loopback] };
// A forwarded ClusterIP packet from a pod to the last service port: the longest lookups.
const packet = generatePackets(state).filter((p) => p.source === "pod").at(-1)!;
const nft = nftablesTracer.rendered({ ...config, mode: "nftables" }, state);
const ipvs = ipvsTracer.rendered({ ...config, mode: "ipvs" }, state);
const options = modelOptions({ ...config, mode: "nftables" }, state, node.localAddresses);

Deno.bench("model decision (baseline)", { group: "trace-2000", baseline: true }, () => {
  modelDecision(state, packet, options);
});

Deno.bench("nftables trace, rules parsed cold", { group: "trace-2000" }, () => {
  // A fresh table object: the walker's per-table cache of parsed rules misses.
  nftablesTracer.trace({ ...nft }, packet, node);
});

Deno.bench("ipvs trace, texts parsed cold", { group: "trace-2000" }, () => {
  ipvsTracer.trace({ ...ipvs }, packet, node);
});

Deno.bench("nftables trace, warm", { group: "trace-2000-warm", baseline: true }, () => {
  nftablesTracer.trace(nft, packet, node);
});

Deno.bench("ipvs trace, warm", { group: "trace-2000-warm" }, () => {
  ipvsTracer.trace(ipvs, packet, node);
});
