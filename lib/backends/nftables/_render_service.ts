/**
 * The objects of one service port. Without session affinity a service port owns no chain: it
 * adds map elements (dispatch in `service-ips` / `service-nodeports`, endpoints by index in
 * `service-endpoints` / `nodeport-endpoints`) that lead to a shared chain per endpoint count.
 * With ClientIP affinity it gets upstream-like `service-`/`local-`/`external-` chains and one
 * dynamic `affinity-` set per endpoint, since the remembered choice is per-endpoint state.
 */
import { cidrContains, cidrString, joinHostPort, parseCIDR } from "../../net/mod.ts";
import {
  type Endpoint,
  externallyAccessible,
  servicePortNameString,
  type ServicePortState,
  usesClusterEndpoints,
  usesLocalEndpoints,
} from "../../proxy/mod.ts";
import { type NftOwnedObjects, ObjectCollector } from "./_table_objects.ts";
import {
  CLUSTER_IPS,
  clusterChainName,
  endpointBase,
  endpointMapName,
  externalChainName,
  externalLocalChainName,
  FIREWALL_ALLOW,
  FIREWALL_IPS,
  HAIRPIN_CONNECTIONS,
  hashedName,
  MARK_FOR_MASQUERADE,
  NO_ENDPOINT_NODEPORTS,
  NO_ENDPOINT_SERVICES,
  REJECT_CHAIN,
  SERVICE_IPS,
  SERVICE_NODEPORTS,
  servicePortChainBase,
  SHORT_CIRCUIT_OFFSET,
} from "./_names.ts";
import type { NftRenderConfig } from "./render_options.ts";
import { nftQuote } from "./table_model.ts";

/** The jhash seed of every affinity pick rule (any fixed value works; the same for all). */
const AFFINITY_PICK_SEED = "0x6b707279";

/** The objects of one service port and what it reports to metrics. */
export interface NftServicePortObjects extends NftOwnedObjects {
  readonly noLocalEndpointsInternal: boolean;
  readonly noLocalEndpointsExternal: boolean;
}

/** Where traffic to one entry point goes: a shared chain with its endpoint lists, or a chain. */
interface Target {
  readonly chain: string;
  /** Endpoints written at index 0.. and at SHORT_CIRCUIT_OFFSET.. under the entry's key. */
  readonly primary: readonly Endpoint[];
  readonly shortCircuit: readonly Endpoint[];
}

/** Ensures the shared chain `name` exists, with the rules `rules()` builds. */
function sharedChain(b: ObjectCollector, name: string, rules: () => string[]): void {
  if (!b.hasChain(name)) b.chain(name, rules());
}

/** The objects of one (already validated) service port. */
export function renderNftServicePort(
  c: NftRenderConfig,
  sps: ServicePortState,
): NftServicePortObjects {
  const b = new ObjectCollector();
  const info = sps.info;
  const ip = c.ipWord;
  const name = servicePortNameString(info.name);
  const proto = info.protocol.toLowerCase();
  const accessible = externallyAccessible(info);
  const externalPolicyLocal = info.externalPolicyLocal && accessible;
  const hasEndpoints = sps.hasAnyEndpoints;
  const clusterEps = usesClusterEndpoints(info) ? sps.clusterEndpoints : [];
  const localEps = usesLocalEndpoints(info) ? sps.localEndpoints : [];
  const internalEps = info.internalPolicyLocal ? localEps : clusterEps;
  const hasInternalEndpoints = hasEndpoints && internalEps.length > 0;
  const hasExternalEndpoints = hasEndpoints && !(externalPolicyLocal && localEps.length === 0);

  const dnat = (nodePort: boolean, n: number, offset: number) => {
    const key = nodePort ? `${proto} dport` : `${ip} daddr . ${proto} dport`;
    const off = offset === 0 ? "" : ` offset ${offset}`;
    return `meta l4proto ${proto} dnat ${ip} addr . port to ${key} . numgen random mod ${n}${off} map @${
      endpointMapName(nodePort, proto)
    }`;
  };
  const masq = `jump ${MARK_FOR_MASQUERADE}`;
  const fibLocal = "fib saddr type local";

  // Session affinity: chains and sets of this service port's own.
  const sticky = info.stickyMaxAgeSeconds > 0;
  const base = servicePortChainBase(info.name.namespace, info.name.name, proto, info.name.port);
  const affinityChain = (prefix: string, eps: readonly Endpoint[]): string | null => {
    if (eps.length === 0) return null;
    const chain = hashedName(prefix, base);
    if (b.hasChain(chain)) return chain;
    const rules: string[] = [];
    const picks: string[] = [];
    eps.forEach((ep, i) => {
      const set = hashedName("affinity-", endpointBase(base, ep.ip, ep.port));
      b.set(set, "set", [
        `type ${c.addrType}`,
        "flags dynamic,timeout",
        `timeout ${info.stickyMaxAgeSeconds}s`,
      ]);
      const act = `update @${set} { ${ip} saddr } dnat ${ip} to ${joinHostPort(ep.ip, ep.port)}`;
      const l4 = `meta l4proto ${proto}`;
      rules.push(`${l4} ${ip} saddr @${set} ${act}`);
      // One fixed seed for every pick: without it the kernel seeds each jhash expression at
      // random, so a new client could match none of the picks and go un-DNATed.
      picks.push(
        `${l4} jhash ${ip} saddr . th sport mod ${eps.length} seed ${AFFINITY_PICK_SEED} == ${i} ${act}`,
      );
    });
    b.chain(chain, [...rules, ...picks]);
    return chain;
  };
  const stickyCluster = sticky ? affinityChain("service-", clusterEps) : null;
  const stickyLocal = sticky ? affinityChain("local-", localEps) : null;

  /** The target of ClusterIP traffic. */
  const internalTarget = (): Target | null => {
    if (!hasInternalEndpoints) return null;
    if (sticky) {
      const chain = info.internalPolicyLocal ? stickyLocal : stickyCluster;
      return chain === null ? null : { chain, primary: [], shortCircuit: [] };
    }
    const chain = clusterChainName(proto, internalEps.length);
    sharedChain(b, chain, () => [dnat(false, internalEps.length, 0)]);
    return { chain, primary: internalEps, shortCircuit: [] };
  };

  /** The target of external traffic (external/LB IPs, or NodePorts when `nodePort`). */
  const externalTarget = (nodePort: boolean): Target | null => {
    if (!hasEndpoints) return null;
    if (sticky) {
      const chain = hashedName("external-", base);
      if (!b.hasChain(chain)) {
        const rules: string[] = [];
        if (!externalPolicyLocal) {
          rules.push(masq);
          if (stickyCluster !== null) rules.push(`goto ${stickyCluster}`);
        } else {
          if (stickyCluster !== null) {
            if (c.ifLocal !== null) rules.push(`${c.ifLocal} goto ${stickyCluster}`);
            rules.push(`${fibLocal} ${masq}`, `${fibLocal} goto ${stickyCluster}`);
          }
          if (stickyLocal !== null) rules.push(`goto ${stickyLocal}`);
        }
        b.chain(chain, rules);
      }
      return { chain, primary: [], shortCircuit: [] };
    }
    if (!externalPolicyLocal) {
      const n = clusterEps.length;
      const chain = externalChainName(nodePort, proto, n);
      sharedChain(b, chain, () => (n === 0 ? [masq] : [masq, dnat(nodePort, n, 0)]));
      return { chain, primary: clusterEps, shortCircuit: [] };
    }
    const n = localEps.length;
    const m = clusterEps.length;
    const chain = externalLocalChainName(nodePort, proto, n, m);
    sharedChain(b, chain, () => {
      const rules: string[] = [];
      if (m > 0) {
        const sc = dnat(nodePort, m, SHORT_CIRCUIT_OFFSET);
        if (c.ifLocal !== null) {
          rules.push(`${c.ifLocal} ${sc} comment ${nftQuote("short-circuit pod traffic")}`);
        }
        rules.push(`${fibLocal} ${masq} comment ${nftQuote("masquerade local traffic")}`);
        rules.push(`${fibLocal} ${sc} comment ${nftQuote("short-circuit local traffic")}`);
      }
      if (n > 0) rules.push(dnat(nodePort, n, 0));
      return rules;
    });
    return { chain, primary: localEps, shortCircuit: clusterEps };
  };

  /** Writes dispatch, endpoint and no-endpoint elements of one entry point. */
  const entry = (
    addr: string | null,
    what: string,
    target: Target | null,
    fallback: "drop" | "reject" | null,
  ) => {
    const nodePort = addr === null;
    const key = nodePort ? `${proto} . ${info.nodePort}` : `${addr} . ${proto} . ${info.port}`;
    const dispatch = nodePort ? SERVICE_NODEPORTS : SERVICE_IPS;
    const endpoints = endpointMapName(nodePort, proto);
    // The endpoint maps are per protocol, so their keys leave the protocol out.
    const epKey = nodePort ? String(info.nodePort) : `${addr} . ${info.port}`;
    const noEndpoints = nodePort ? NO_ENDPOINT_NODEPORTS : NO_ENDPOINT_SERVICES;
    const comment = ` comment ${nftQuote(`${name} ${what}`)}`;
    if (target !== null) {
      if (b.hasElement(dispatch, key)) return;
      b.element(dispatch, key, `${comment} : goto ${target.chain}`);
      // Unique: indexes under a key whose dispatch element this owner adds once.
      const p = target.primary;
      for (let i = 0; i < p.length; i++) {
        b.uniqueElement(endpoints, `${epKey} . ${i}`, ` : ${p[i]!.ip} . ${p[i]!.port}`);
      }
      const sc = target.shortCircuit;
      for (let i = 0; i < sc.length; i++) {
        const k = `${epKey} . ${SHORT_CIRCUIT_OFFSET + i}`;
        b.uniqueElement(endpoints, k, ` : ${sc[i]!.ip} . ${sc[i]!.port}`);
      }
    }
    if (fallback !== null) {
      const verdict = fallback === "drop" ? "drop" : `goto ${REJECT_CHAIN}`;
      b.element(noEndpoints, key, `${comment} : ${verdict}`);
    }
  };
  const externalFallback = !hasEndpoints ? "reject" : !hasExternalEndpoints ? "drop" : null;

  b.element(CLUSTER_IPS, info.clusterIP);
  entry(
    info.clusterIP,
    "cluster IP",
    internalTarget(),
    !hasEndpoints ? "reject" : !hasInternalEndpoints ? "drop" : null,
  );
  const ext = accessible && hasEndpoints && (info.externalIPs.length > 0 ||
      info.loadBalancerIPs.length > 0)
    ? externalTarget(false)
    : null;
  for (const addr of info.externalIPs) {
    entry(addr, "external IP", ext, externalFallback);
  }
  for (const addr of info.loadBalancerIPs) {
    entry(addr, "loadbalancer IP", ext, externalFallback);
  }
  if (info.nodePort !== 0) {
    const np = hasEndpoints ? externalTarget(true) : null;
    entry(null, "nodePort", np, externalFallback);
  }

  // loadBalancerSourceRanges: dropped before DNAT by firewall-check (NodePorts exempt).
  if (hasEndpoints && info.loadBalancerIPs.length > 0 && info.loadBalancerSourceRanges.length > 0) {
    const ranges = info.loadBalancerSourceRanges.map((r) => parseCIDR(r)!).filter((r, i, all) =>
      !all.some((o, j) =>
        (o.prefix < r.prefix || (o.prefix === r.prefix && j < i)) && cidrContains(o, r.ip)
      )
    );
    const allowNode = ranges.some((r) => c.nodeIPs.some((n) => cidrContains(r, n)));
    for (const lb of info.loadBalancerIPs) {
      const key = `${lb} . ${proto} . ${info.port}`;
      b.element(FIREWALL_IPS, key, ` comment ${nftQuote(name)}`);
      for (const r of ranges) b.element(FIREWALL_ALLOW, `${key} . ${cidrString(r)}`);
      if (allowNode) {
        for (const src of info.loadBalancerIPs) b.element(FIREWALL_ALLOW, `${key} . ${src}`);
      }
    }
  }

  // Hairpin: a local endpoint reaching itself through the service is masqueraded.
  for (const ep of sps.allReachableEndpoints) {
    if (ep.isLocal) {
      b.element(HAIRPIN_CONNECTIONS, `${ep.ip} . ${ep.ip} . ${proto} . ${ep.port}`);
    }
  }

  return {
    ...b.objects(),
    noLocalEndpointsInternal: hasEndpoints && !hasInternalEndpoints,
    noLocalEndpointsExternal: hasEndpoints && !hasExternalEndpoints,
  };
}
