/**
 * The rules in a service port's own nat chains (EXT, FW, SVC, SVL, SEP), which a partial sync
 * leaves out for unchanged service ports. Split from render_service.ts, which decides what a
 * service port uses and writes its top-level captures.
 */
import { cidrContains, cidrString, parseCIDR } from "../../net/mod.ts";
import type { Endpoint, ServicePortState } from "../../proxy/mod.ts";
import type { ChainNameCache, ServicePortChains } from "./chain_name_cache.ts";
import { KUBE_MARK_MASQ } from "./chain_names.ts";
import { writeEndpointChain, writeServiceToEndpointRules } from "./_render_endpoints.ts";
import type { ResolvedRenderConfig } from "./render_options.ts";
import { quoted, type RulePart } from "../../netfilter/mod.ts";
import type { RuleBuffers } from "./rule_buffer.ts";

/** What renderServicePort decided about one service port; both halves of its rules follow it. */
export interface ServicePortPlan {
  /** The servicePortKey owning the lines. */
  readonly key: string;
  readonly sps: ServicePortState;
  /** `ns/name:port`. */
  readonly name: string;
  /** Lower-case protocol. */
  readonly protocol: string;
  /** The SVC/SVL/EXT/FW names, hashed on first use. */
  readonly chains: ServicePortChains;
  /** The SEP name of each reachable endpoint, in `sps.allReachableEndpoints` order (namesOf). */
  readonly endpointChainNames: readonly string[];
  readonly internalPolicyLocal: boolean;
  readonly externalPolicyLocal: boolean;
  readonly hasInternalEndpoints: boolean;
  readonly hasExternalEndpoints: boolean;
  readonly usesExternalTrafficChain: boolean;
  readonly usesFWChain: boolean;
  readonly usesClusterPolicyChain: boolean;
  readonly usesLocalPolicyChain: boolean;
  /** `-m proto -p proto -d clusterIP --dport port`. */
  readonly clusterIPMatch: RulePart;
}

/** The SEP name of each reachable endpoint, keyed by the endpoint (for the rules that name them). */
function endpointChainsByEndpoint(plan: ServicePortPlan): Map<Endpoint, string> {
  const out = new Map<Endpoint, string>();
  const endpoints = plan.sps.allReachableEndpoints;
  for (let i = 0; i < endpoints.length; i++) out.set(endpoints[i]!, plan.endpointChainNames[i]!);
  return out;
}

/** The own nat chains of a service port, in the order their declarations are written. */
export function servicePortOwnChains(plan: ServicePortPlan): string[] {
  const out: string[] = [];
  if (plan.usesExternalTrafficChain) out.push(plan.chains.external);
  if (plan.usesFWChain) out.push(plan.chains.firewall);
  if (plan.usesClusterPolicyChain) out.push(plan.chains.cluster);
  if (plan.usesLocalPolicyChain) out.push(plan.chains.local);
  for (const sep of plan.endpointChainNames) out.push(sep);
  return out;
}

/**
 * How many rules writeServicePortChains() writes for `plan`, without building them: what a
 * partial sync reports for the service ports it leaves out. Mirrors the writer branch for branch.
 */
export function countServicePortChainRules(
  config: ResolvedRenderConfig,
  plan: ServicePortPlan,
): number {
  const { sps } = plan;
  const info = sps.info;
  let n = 0;
  if (plan.hasInternalEndpoints && (config.masqueradeAll || config.ifNotLocal !== null)) n++;
  if (plan.usesExternalTrafficChain) {
    n += plan.externalPolicyLocal ? (config.ifLocal !== null ? 3 : 2) : 1;
    if (plan.hasExternalEndpoints) n++;
  }
  if (plan.usesFWChain) {
    let allowFromNode = false;
    for (const range of info.loadBalancerSourceRanges) {
      const cidr = parseCIDR(range);
      if (cidr === null) continue;
      n++;
      if (config.nodeIPs.some((ip) => cidrContains(cidr, ip))) allowFromNode = true;
    }
    if (allowFromNode) n += info.loadBalancerIPs.length;
    n++;
  }
  const perEndpoint = info.stickyMaxAgeSeconds > 0 ? 2 : 1;
  if (plan.usesClusterPolicyChain) n += perEndpoint * sps.clusterEndpoints.length;
  if (plan.usesLocalPolicyChain) n += perEndpoint * sps.localEndpoints.length;
  return n + 2 * sps.allReachableEndpoints.length;
}

/** What the chain writer needs from the render besides the plan. */
export interface ServiceChainsContext {
  readonly config: ResolvedRenderConfig;
  readonly chainNames: ChainNameCache;
  /** Above 1000 endpoints upstream drops the per-endpoint comments. */
  readonly largeClusterMode: boolean;
}

const comment = (text: string): RulePart => ["-m", "comment", "--comment", text];

/** Writes the rules of the service port's own chains (not their declarations) into `b`. */
export function writeServicePortChains(
  ctx: ServiceChainsContext,
  b: RuleBuffers,
  plan: ServicePortPlan,
): void {
  const { config } = ctx;
  const { key, name, sps, chains } = plan;
  const info = sps.info;

  if (plan.hasInternalEndpoints) {
    const internalTrafficChain = plan.internalPolicyLocal ? chains.local : chains.cluster;
    const args: RulePart = [comment(quoted(`${name} cluster IP`)), plan.clusterIPMatch].flat();
    if (config.masqueradeAll) {
      b.nat(key, "-A", internalTrafficChain, args, "-j", KUBE_MARK_MASQ);
    } else if (config.ifNotLocal !== null) {
      // Off-cluster traffic to a service VIP may bounce off-node: masquerade it.
      b.nat(key, "-A", internalTrafficChain, args, config.ifNotLocal, "-j", KUBE_MARK_MASQ);
    }
  }

  if (plan.usesExternalTrafficChain) {
    const externalTrafficChain = chains.external;
    if (!plan.externalPolicyLocal) {
      b.nat(
        key,
        "-A",
        externalTrafficChain,
        comment(quoted(`masquerade traffic for ${name} external destinations`)),
        "-j",
        KUBE_MARK_MASQ,
      );
    } else {
      if (config.ifLocal !== null) {
        b.nat(
          key,
          "-A",
          externalTrafficChain,
          comment(quoted(`pod traffic for ${name} external destinations`)),
          config.ifLocal,
          "-j",
          chains.cluster,
        );
      }
      b.nat(
        key,
        "-A",
        externalTrafficChain,
        comment(quoted(`masquerade LOCAL traffic for ${name} external destinations`)),
        "-m",
        "addrtype",
        "--src-type",
        "LOCAL",
        "-j",
        KUBE_MARK_MASQ,
      );
      b.nat(
        key,
        "-A",
        externalTrafficChain,
        comment(quoted(`route LOCAL traffic for ${name} external destinations`)),
        "-m",
        "addrtype",
        "--src-type",
        "LOCAL",
        "-j",
        chains.cluster,
      );
    }
    if (plan.hasExternalEndpoints) {
      const externalPolicyChain = plan.externalPolicyLocal ? chains.local : chains.cluster;
      b.nat(key, "-A", externalTrafficChain, "-j", externalPolicyChain);
    }
  }

  if (plan.usesFWChain) {
    const fwChain = chains.firewall;
    const externalTrafficChain = chains.external;
    const fwArgs: RulePart = [
      "-A",
      fwChain,
      "-m",
      "comment",
      "--comment",
      quoted(`${name} loadbalancer IP`),
    ];
    let allowFromNode = false;
    for (const range of info.loadBalancerSourceRanges) {
      const cidr = parseCIDR(range);
      if (cidr === null) continue; // untrustedValue() already rejected these
      b.nat(key, fwArgs, "-s", cidrString(cidr), "-j", externalTrafficChain);
      if (config.nodeIPs.some((ip) => cidrContains(cidr, ip))) allowFromNode = true;
    }
    if (allowFromNode) {
      for (const ip of info.loadBalancerIPs) {
        b.nat(key, fwArgs, "-s", ip, "-j", externalTrafficChain);
      }
    }
    b.nat(
      key,
      "-A",
      fwChain,
      comment(quoted(`other traffic to ${name} will be dropped by KUBE-PROXY-FIREWALL`)),
    );
  }

  const endpointCtx = {
    buffers: b,
    endpointChains: endpointChainsByEndpoint(plan),
    key,
    name,
    protocol: plan.protocol,
    info,
    largeClusterMode: ctx.largeClusterMode,
  };
  if (plan.usesClusterPolicyChain) {
    writeServiceToEndpointRules(endpointCtx, chains.cluster, sps.clusterEndpoints);
  }
  if (plan.usesLocalPolicyChain) {
    writeServiceToEndpointRules(endpointCtx, chains.local, sps.localEndpoints);
  }
  for (const ep of sps.allReachableEndpoints) writeEndpointChain(endpointCtx, ep);
}
