/**
 * The rules of one service port, block for block as upstream's syncProxyRules writes them:
 * KUBE-SERVICES/KUBE-NODEPORTS captures (top-level), filter REJECT/DROP rules, then the
 * service's own SVC/SVL/EXT/FW/SEP chains (render_service_chains.ts; owned by the service
 * port, and only counted, not written, when the caller says it need not be rewritten).
 */
import { LOCALHOST_NODEPORTS_ACCEPTED_COUNTER } from "./nfacct.ts";
import {
  externallyAccessible as isExternallyAccessible,
  servicePortNameString,
  type ServicePortState,
  usesClusterEndpoints as servicePortUsesClusterEndpoints,
  usesLocalEndpoints as servicePortUsesLocalEndpoints,
} from "../../proxy/mod.ts";
import {
  KUBE_EXTERNAL_SERVICES,
  KUBE_NODEPORTS,
  KUBE_PROXY_FIREWALL,
  KUBE_SERVICES,
} from "./chain_names.ts";
import {
  countServicePortChainRules,
  type ServiceChainsContext,
  servicePortOwnChains,
  type ServicePortPlan,
  writeServicePortChains,
} from "./_render_service_chains.ts";
import { quoted, type RulePart } from "../../netfilter/mod.ts";
import type { RuleBuffers } from "./rule_buffer.ts";

/** Per-render context shared by every service port. */
export interface ServiceRenderContext extends ServiceChainsContext {
  readonly buffers: RuleBuffers;
  /**
   * Whether to write the own chains of service port `key` (named `chains`); when false only
   * their rules are counted. Top-level rules are always written.
   */
  readonly writeServiceChains: (key: string, chains: readonly string[]) => boolean;
}

/** Which ServiceNoLocalEndpoints metrics a service port contributes to. */
export interface ServiceRenderResult {
  /** nat chains this service port owns in this render, written or not. */
  readonly chains: readonly string[];
  /** Rules of its own chains that were counted but not written. */
  readonly omittedNatRules: number;
  readonly noLocalEndpointsInternal: boolean;
  readonly noLocalEndpointsExternal: boolean;
}

/** Writes every rule of one service port; `key` is its servicePortKey. */
export function renderServicePort(
  ctx: ServiceRenderContext,
  key: string,
  sps: ServicePortState,
): ServiceRenderResult {
  const { buffers: b } = ctx;
  const info = sps.info;
  const name = servicePortNameString(info.name);
  const protocol = info.protocol.toLowerCase();
  const proto: RulePart = ["-m", protocol, "-p", protocol];
  const port = String(info.port);
  const comment = (text: string): RulePart => ["-m", "comment", "--comment", text];

  const externallyAccessible = isExternallyAccessible(info);
  const externalPolicyLocal = info.externalPolicyLocal && externallyAccessible;
  const internalPolicyLocal = info.internalPolicyLocal;
  // The same answers endpoint selection used: ETP Local still short-circuits pod and node
  // traffic to the cluster chain, so an externally reachable service always needs it.
  const usesClusterEndpoints = servicePortUsesClusterEndpoints(info);
  const usesLocalEndpoints = servicePortUsesLocalEndpoints(info);

  const hasEndpoints = sps.hasAnyEndpoints;
  // Names are hashed on first use: a service port without endpoints never needs them.
  const names = ctx.chainNames.namesOf(sps);
  const chains = names.chains;
  const usesClusterPolicyChain = sps.clusterEndpoints.length > 0 && usesClusterEndpoints;
  const usesLocalPolicyChain = sps.localEndpoints.length > 0 && usesLocalEndpoints;

  const hasInternalEndpoints = hasEndpoints &&
    !(internalPolicyLocal && sps.localEndpoints.length === 0);
  const hasExternalEndpoints = hasEndpoints &&
    !(externalPolicyLocal && sps.localEndpoints.length === 0);
  const usesExternalTrafficChain = hasEndpoints && externallyAccessible;

  const usesFWChain = hasEndpoints && info.loadBalancerIPs.length > 0 &&
    info.loadBalancerSourceRanges.length > 0;

  let internalFilterTarget = "";
  let internalFilterComment = "";
  let externalFilterTarget = "";
  let externalFilterComment = "";
  if (!hasEndpoints) {
    internalFilterTarget = externalFilterTarget = "REJECT";
    internalFilterComment = externalFilterComment = quoted(`${name} has no endpoints`);
  } else {
    if (!hasInternalEndpoints) {
      internalFilterTarget = "DROP";
      internalFilterComment = quoted(`${name} has no local endpoints`);
    }
    if (!hasExternalEndpoints) {
      externalFilterTarget = "DROP";
      externalFilterComment = quoted(`${name} has no local endpoints`);
    }
  }

  const destination = (ip: string): RulePart => [...proto, "-d", ip, "--dport", port];
  /** A nat capture into KUBE-SERVICES (or KUBE-NODEPORTS) of one kind of address. */
  const capture = (chain: string, what: string, match: RulePart, target: string) =>
    b.nat(null, "-A", chain, comment(what), match, "-j", target);
  /** The filter REJECT/DROP of external traffic when no endpoint (local) may take it. */
  const filterExternal = (match: RulePart) =>
    b.filter(
      "-A",
      KUBE_EXTERNAL_SERVICES,
      comment(externalFilterComment),
      match,
      "-j",
      externalFilterTarget,
    );

  // Capture the clusterIP.
  const clusterIPMatch = destination(info.clusterIP);
  if (hasInternalEndpoints) {
    const target = internalPolicyLocal ? chains.local : chains.cluster;
    capture(KUBE_SERVICES, quoted(`${name} cluster IP`), clusterIPMatch, target);
  } else {
    b.filter(
      "-A",
      KUBE_SERVICES,
      comment(internalFilterComment),
      clusterIPMatch,
      "-j",
      internalFilterTarget,
    );
  }

  // Capture externalIPs.
  for (const ip of info.externalIPs) {
    const match = destination(ip);
    if (hasEndpoints) {
      capture(KUBE_SERVICES, quoted(`${name} external IP`), match, chains.external);
    }
    if (!hasExternalEndpoints) filterExternal(match);
  }

  // Capture load balancer ingress.
  for (const ip of info.loadBalancerIPs) {
    const match = destination(ip);
    if (hasEndpoints) {
      const target = usesFWChain ? chains.firewall : chains.external;
      capture(KUBE_SERVICES, quoted(`${name} loadbalancer IP`), match, target);
    }
    if (usesFWChain) {
      b.filter(
        "-A",
        KUBE_PROXY_FIREWALL,
        comment(quoted(`${name} traffic not accepted by ${chains.firewall}`)),
        match,
        "-j",
        "DROP",
      );
    }
  }
  if (!hasExternalEndpoints) {
    for (const ip of info.loadBalancerIPs) filterExternal(destination(ip));
  }

  // Capture NodePorts. (They are not subject to loadBalancerSourceRanges, as upstream.)
  if (info.nodePort !== 0) {
    const nodePortMatch: RulePart = [...proto, "--dport", String(info.nodePort)];
    if (hasEndpoints) {
      if (ctx.config.countLocalhostNodePorts) {
        // The same jump for 127.0.0.0/8 first, only to count localhost NodePort packets.
        const counted: RulePart = [
          ...proto,
          "-d",
          "127.0.0.0/8",
          "--dport",
          String(info.nodePort),
          "-m",
          "nfacct",
          "--nfacct-name",
          LOCALHOST_NODEPORTS_ACCEPTED_COUNTER,
        ];
        capture(KUBE_NODEPORTS, name, counted, chains.external);
      }
      capture(KUBE_NODEPORTS, name, nodePortMatch, chains.external);
    }
    if (!hasExternalEndpoints) {
      filterExternal(["-m", "addrtype", "--dst-type", "LOCAL", ...nodePortMatch]);
    }
  }

  // Accept health check node port connections, endpoints or not.
  if (info.healthCheckNodePort !== 0) {
    b.filter(
      "-A",
      KUBE_NODEPORTS,
      comment(quoted(`${name} health check node port`)),
      "-m",
      "tcp",
      "-p",
      "tcp",
      "--dport",
      String(info.healthCheckNodePort),
      "-j",
      "ACCEPT",
    );
  }

  // From here on: the service's own chains, left out when unchanged in a partial sync.
  const plan: ServicePortPlan = {
    key,
    sps,
    name,
    protocol,
    chains,
    endpointChainNames: names.endpoints,
    internalPolicyLocal,
    externalPolicyLocal,
    hasInternalEndpoints,
    hasExternalEndpoints,
    usesExternalTrafficChain,
    usesFWChain,
    usesClusterPolicyChain,
    usesLocalPolicyChain,
    clusterIPMatch,
  };
  const ownChains = servicePortOwnChains(plan);
  let omittedNatRules = 0;
  if (ctx.writeServiceChains(key, ownChains)) {
    for (const chain of ownChains) b.natChain(key, chain);
    writeServicePortChains(ctx, b, plan);
  } else {
    omittedNatRules = countServicePortChainRules(ctx.config, plan);
  }

  return {
    chains: ownChains,
    omittedNatRules,
    noLocalEndpointsInternal: hasEndpoints && !hasInternalEndpoints,
    noLocalEndpointsExternal: hasEndpoints && !hasExternalEndpoints,
  };
}
