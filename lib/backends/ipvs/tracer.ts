/**
 * The IPVS-mode tracer. A new connection goes, as in the kernel: nat PREROUTING (or OUTPUT
 * from the node) where KUBE-SERVICES marks it for masquerade; to a local address (node IPs and
 * kube-ipvs0) through filter INPUT (source ranges, KUBE-IPVS-FILTER's REJECT of unused VIP
 * ports); then IPVS looks up the virtual server `ip:port/PROTO` and picks one of its real
 * servers of weight > 0 (rr: equal shares; persistence = affinity); a virtual server without
 * one answers ICMP port-unreachable (reject); then nat POSTROUTING masquerades marked traffic.
 * From the node, IPVS acts at LOCAL_OUT, before filter OUTPUT (KUBE-IPVS-OUT-FILTER).
 */
import { type KernelIpset, parseIpsetSave } from "./_ipset_parser.ts";
import { parseIpvsadmSave } from "./ipvsadm_parser.ts";
import { type IpvsTable, virtualServerKey } from "./virtual_server.ts";
import { joinHostPort } from "../../net/mod.ts";
import {
  type IptablesRules,
  IPVS_MODE_MODULES,
  newConnection,
  parseIptablesRules,
  walkChain,
  type WalkContext,
  type WalkPacket,
  walkStart,
  type WalkState,
} from "../../netfilter/mod.ts";
import type { Protocol } from "../../proxy/mod.ts";
import type { TraceDecision, TracePacket, TraceResult } from "../../trace/mod.ts";
import type { ModeTracer, TraceNode } from "../../trace/mod.ts";
import { canonicalAddress } from "./_trace_canonical.ts";
import { ipsetMatches } from "./_trace_ipset_match.ts";
import {
  type IpvsRules,
  ipvsServiceNames,
  readIpvsRules,
  renderedIpvsRules,
} from "./_trace_rules.ts";

interface ParsedIpvs {
  readonly table: IpvsTable;
  readonly sets: ReadonlyMap<string, KernelIpset>;
  readonly tables: IptablesRules;
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
      tables: parseIptablesRules(rules.iptables, rules.family),
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
  const inSet = (name: string, flags: string, q: WalkPacket) => {
    const set = r.sets.get(name);
    if (set === undefined) {
      throw new RangeError(
        `Cannot trace through "-m set --match-set ${name} ${flags}": ipset "${name}" is not in ipset save`,
      );
    }
    return ipsetMatches(set, name, flags, q);
  };
  const ctx = (table: "nat" | "filter"): WalkContext => ({
    rules: r.tables,
    table,
    isLocal,
    fromPod: packet.source === "pod",
    modules: IPVS_MODE_MODULES,
    inSet,
  });
  let p = newConnection({
    src: packet.from,
    dst: packet.to,
    dport: packet.port,
    proto: packet.protocol,
  });
  const path: string[] = [];
  const vsKey = virtualServerKey({
    address: canon(packet.to),
    port: packet.port,
    protocol: packet.protocol.toUpperCase() as Protocol,
  });
  const serviceName = rules.serviceNames.get(vsKey) ?? "";
  const refused = (o: WalkState): TraceResult | null => {
    if (o.verdict !== "DROP" && o.verdict !== "REJECT") return null;
    let decision: TraceDecision;
    const chain = o.verdictChain;
    if (chain === "KUBE-IPVS-FILTER") {
      decision = { kind: "reject", servicePort: "", reason: "unused-port" };
    } else if (chain === "KUBE-SOURCE-RANGES-FIREWALL" || chain === "KUBE-IPVS-OUT-FILTER") {
      decision = { kind: "drop", servicePort: serviceName, reason: "source-range" };
    } else {
      throw new RangeError(
        `A ${o.verdict} in chain ${chain} that no service explains (path: ${path.join(" > ")})`,
      );
    }
    return { decision, path };
  };
  /** One walk of a built-in chain; the chains entered are added to `into`, table-qualified. */
  const walkOnce = (table: "nat" | "filter", chain: string, q: WalkPacket, into: string[]) => {
    const ways = walkChain(ctx(table), chain, walkStart(q));
    // IPVS mode writes no weighted rules, so a packet leaves each hook one way.
    if (ways.length !== 1) {
      throw new RangeError(`Cannot trace: ${table} ${chain} split the packet ${ways.length} ways`);
    }
    const o = ways[0]!;
    into.push(`${table}:${chain}`, ...o.path.map((c) => c.includes(":") ? c : `nat:${c}`));
    return o;
  };
  const walk = (table: "nat" | "filter", chain: string, q: WalkPacket) =>
    walkOnce(table, chain, q, path);

  const fromNode = packet.source === "node";
  p = walk("nat", fromNode ? "OUTPUT" : "PREROUTING", p).packet;
  const vs = r.table.get(vsKey);
  const toLocal = isLocal(packet.to);
  if (!fromNode && toLocal) {
    const input = walk("filter", "INPUT", p);
    const stop = refused(input);
    if (stop !== null) return stop;
    p = input.packet;
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
    let q: WalkPacket = {
      ...p,
      dst: rs.address,
      dport: rs.port,
      mark: markBefore,
      vs: vsRef,
    };
    if (fromNode) {
      const output = walk("filter", "OUTPUT", q);
      const stop = refused(output);
      if (stop !== null) return stop;
      q = output.packet;
    }
    const post = walkOnce("nat", "POSTROUTING", q, []);
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
