/**
 * The IPVS-mode tracer. A new connection goes, as in the kernel: nat PREROUTING (or OUTPUT
 * from the node) where KUBE-SERVICES marks it for masquerade; to a local address (node IPs and
 * kube-ipvs0) through filter INPUT (source ranges, KUBE-IPVS-FILTER's REJECT of unused VIP
 * ports); then IPVS looks up the virtual server `ip:port/PROTO` and picks one of its real
 * servers of weight > 0 (rr: equal shares; persistence = affinity); a virtual server without
 * one answers ICMP port-unreachable (reject); then nat POSTROUTING masquerades marked traffic.
 * From the node, IPVS acts at LOCAL_OUT, before filter OUTPUT (KUBE-IPVS-OUT-FILTER).
 */
import {
  type IpvsTable,
  type KernelIpset,
  parseIpsetSave,
  parseIpvsadmSave,
  virtualServerKey,
} from "../../backends/ipvs/mod.ts";
import { joinHostPort } from "../../net/mod.ts";
import type { Protocol } from "../../proxy/mod.ts";
import type { TraceDecision, TracePacket, TraceResult } from "../decision.ts";
import type { ModeTracer, TraceNode } from "../tracer.ts";
import {
  type IptablesContext,
  type IptablesOutcome,
  type IptablesPacket,
  type IptablesTables,
  parseIptablesTables,
  walkIptables,
} from "./iptables_walk.ts";
import { canonicalAddress } from "./canonical.ts";
import { type IpvsRules, ipvsServiceNames, readIpvsRules, renderedIpvsRules } from "./rules.ts";

interface ParsedIpvs {
  readonly table: IpvsTable;
  readonly sets: ReadonlyMap<string, KernelIpset>;
  readonly tables: IptablesTables;
  /** The kube-ipvs0 addresses, canonical. */
  readonly bound: ReadonlySet<string>;
}

const canon = canonicalAddress;

// Parsed once per rules object: a differential run traces thousands of packets per state.
const parsedCache = new WeakMap<IpvsRules, ParsedIpvs>();

function parsed(rules: IpvsRules): ParsedIpvs {
  let p = parsedCache.get(rules);
  if (p === undefined) {
    p = {
      table: parseIpvsadmSave(rules.ipvsadm).table,
      sets: parseIpsetSave(rules.ipsets),
      tables: parseIptablesTables(rules.iptables),
      bound: new Set(rules.addresses.map(canon)),
    };
    parsedCache.set(rules, p);
  }
  return p;
}

/** Follows one new connection through IPVS mode's iptables rules, ipsets and virtual servers. */
export function traceIpvs(rules: IpvsRules, packet: TracePacket, node: TraceNode): TraceResult {
  const r = parsed(rules);
  const nodeLocal = new Set(node.localAddresses.map(canon));
  const isLocal = (ip: string) => {
    const c = canon(ip);
    return r.bound.has(c) || nodeLocal.has(c);
  };
  const ctx = (table: "nat" | "filter"): IptablesContext => ({
    tables: r.tables,
    table,
    sets: r.sets,
    isLocal,
    fromPod: packet.source === "pod",
  });
  const p: IptablesPacket = {
    src: packet.from,
    dst: packet.to,
    dport: packet.port,
    proto: packet.protocol,
    mark: 0,
    vs: null,
  };
  const path: string[] = [];
  const vsKey = virtualServerKey({
    address: canon(packet.to),
    port: packet.port,
    protocol: packet.protocol.toUpperCase() as Protocol,
  });
  const serviceName = rules.serviceNames.get(vsKey) ?? "";
  const refused = (o: IptablesOutcome): TraceResult | null => {
    if (o.verdict !== "DROP" && o.verdict !== "REJECT") return null;
    let decision: TraceDecision;
    if (o.chain === "KUBE-IPVS-FILTER") {
      decision = { kind: "reject", servicePort: "", reason: "unused-port" };
    } else if (o.chain === "KUBE-SOURCE-RANGES-FIREWALL" || o.chain === "KUBE-IPVS-OUT-FILTER") {
      decision = { kind: "drop", servicePort: serviceName, reason: "source-range" };
    } else {
      throw new RangeError(
        `A ${o.verdict} in chain ${o.chain} that no service explains (path: ${path.join(" > ")})`,
      );
    }
    return { decision, path };
  };
  const walk = (table: "nat" | "filter", chain: string, q: IptablesPacket) => {
    const before = path.length;
    const o = walkIptables(ctx(table), chain, q, path);
    // The built-in chain is named once, before the chains it led into.
    path.splice(before, 0, `${table}:${chain}`);
    return o;
  };

  const fromNode = packet.source === "node";
  walk("nat", fromNode ? "OUTPUT" : "PREROUTING", p);
  const vs = r.table.get(vsKey);
  const toLocal = isLocal(packet.to);
  if (!fromNode && toLocal) {
    const stop = refused(walk("filter", "INPUT", p));
    if (stop !== null) return stop;
  }
  if (vs === undefined || (!fromNode && !toLocal)) {
    // No virtual server: the packet goes on as it is.
    const hooks: Array<["filter", string]> = fromNode
      ? [["filter", "OUTPUT"], ...(toLocal ? [["filter", "INPUT"] as ["filter", string]] : [])]
      : toLocal
      ? []
      : [["filter", "FORWARD"]];
    for (const [table, chain] of hooks) {
      const stop = refused(walk(table, chain, p));
      if (stop !== null) return stop;
    }
    return { decision: { kind: "pass" }, path };
  }
  const persistent = vs.vs.persistentTimeout > 0 ? `, persistent ${vs.vs.persistentTimeout}s` : "";
  path.push(`virtual-server[${vsKey} ${vs.vs.scheduler}${persistent}]`);
  const reals = [...vs.realServers.values()].filter((rs) => rs.weight > 0);
  if (reals.length === 0) {
    return { decision: { kind: "reject", servicePort: serviceName, reason: "no-endpoints" }, path };
  }
  const markBefore = p.mark;
  let masquerade = false;
  const addresses: string[] = [];
  for (const rs of reals) {
    const address = joinHostPort(rs.address, rs.port);
    addresses.push(address);
    path.push(`real-server[${address}]`);
  }
  const vsRef = { address: vs.vs.address, port: vs.vs.port, proto: packet.protocol as string };
  for (const rs of reals) {
    const q: IptablesPacket = {
      ...p,
      dst: rs.address,
      dport: rs.port,
      mark: markBefore,
      vs: vsRef,
    };
    if (fromNode) {
      const stop = refused(walk("filter", "OUTPUT", q));
      if (stop !== null) return stop;
    }
    const post = walkIptables(ctx("nat"), "POSTROUTING", q, []);
    // Hairpin SNAT (KUBE-LOOP-BACK) is implied by the endpoint, not counted as masquerade.
    if (
      post.verdict === "MASQUERADE" &&
      (canon(rs.address) !== canon(packet.from) || markBefore !== 0)
    ) {
      masquerade = true;
    }
  }
  path.push("nat:POSTROUTING", "nat:KUBE-POSTROUTING");
  addresses.sort();
  return {
    decision: {
      kind: "forward",
      servicePort: serviceName,
      endpoints: addresses.map((address) => ({ address, probability: 1 / addresses.length })),
      masquerade,
      affinitySeconds: vs.vs.persistentTimeout,
    },
    path: [...new Set(path)],
  };
}

/** The IPVS mode's tracer. */
export const ipvsTracer: ModeTracer<IpvsRules> = {
  read: readIpvsRules,
  rendered: renderedIpvsRules,
  withClusterState: (rules, config, state) => ({
    ...rules,
    serviceNames: ipvsServiceNames(config, state),
  }),
  trace: traceIpvs,
};
