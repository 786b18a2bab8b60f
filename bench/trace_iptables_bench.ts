/**
 * `deno task bench`, trace group: what one `trace` costs in iptables mode over the rules of
 * 2,000 generated service ports, against the reference model's decision for the same packet
 * and state in the same run (the baseline: a lookup in the ProxyState). "warm" reuses parsed
 * and compiled rules; "cold" parses the restore text first, as the CLI parses `iptables-save`,
 * against the proxy's own save parser reading the same text. The text is rendered once, outside the timing. Pure: needs no root.
 */
import { MODE_CONFIG_SECTIONS } from "../lib/backends/mod.ts";
import { iptablesRenderOptions } from "../lib/backends/iptables/render_options.ts";
import { renderFullRestore } from "../lib/backends/iptables/restore_payload.ts";
import { defaultConfig } from "../lib/config/mod.ts";
import { parseIptablesRules, parseIptablesSave } from "../lib/netfilter/mod.ts";
import { iptablesTracer } from "../lib/backends/iptables/tracer.ts";
import { modelDecision, modelOptions } from "../lib/trace/mod.ts";
import { familyPlan, generatePackets, generateState } from "../tests/support/trace_states.ts";

const SIZE = 2000;
const config = {
  ...defaultConfig({ modeSections: MODE_CONFIG_SECTIONS }),
  clusterCIDRs: ["10.0.0.0/8"],
};
const state = generateState(7, SIZE, "IPv4");
const plan = familyPlan("IPv4");
const node = { localAddresses: [plan.nodeIP, plan.loopback] };
// A ClusterIP packet from a pod to the last service port: the longest walk of KUBE-SERVICES.
const packet = generatePackets(state).filter((p) => p.source === "pod").at(-1)!;
const text = renderFullRestore(state, iptablesRenderOptions(config, "IPv4"));
const warm = parseIptablesRules(text, "IPv4");
const options = modelOptions(config, state, node.localAddresses);

Deno.bench("model decision (baseline)", { group: "trace-iptables-2000", baseline: true }, () => {
  modelDecision(state, packet, options);
});

Deno.bench("iptables trace, warm", { group: "trace-iptables-2000" }, () => {
  iptablesTracer.trace(warm, packet, node);
});

Deno.bench("parseIptablesSave of the text (floor)", {
  group: "trace-iptables-2000-cold",
  baseline: true,
}, () => {
  parseIptablesSave(text);
});

Deno.bench("iptables trace, text parsed cold", { group: "trace-iptables-2000-cold" }, () => {
  iptablesTracer.trace(parseIptablesRules(text, "IPv4"), packet, node);
});
