/**
 * The rules of one service port, block for block as upstream's syncProxyRules writes them:
 * KUBE-SERVICES/KUBE-NODEPORTS captures (top-level), filter REJECT/DROP rules, then the
 * service's own SVC/SVL/EXT/FW/SEP chains (owned by the service port, skippable in a
 * partial sync).
 */
import { cidrContains, cidrString, parseCIDR } from "../../net/mod.ts";
import { servicePortNameString, type ServicePortState } from "../../proxy/mod.ts";
import {
  KUBE_EXTERNAL_SERVICES,
  KUBE_MARK_MASQ,
  KUBE_NODEPORTS,
  KUBE_PROXY_FIREWALL,
  KUBE_SERVICES,
  serviceExternalChain,
  serviceFirewallChain,
  servicePortPolicyClusterChain,
  servicePortPolicyLocalChain,
} from "./chain_names.ts";
import type { ResolvedRenderConfig } from "./render_options.ts";
import { quoted, type RuleBuffers, type RulePart } from "./rule_buffer.ts";
import { writeEndpointChain, writeServiceToEndpointRules } from "./render_endpoints.ts";

/** Per-render context shared by every service port. */
export interface ServiceRenderContext {
  readonly config: ResolvedRenderConfig;
  readonly buffers: RuleBuffers;
  /** Above 1000 endpoints upstream drops the per-endpoint comments. */
  readonly largeClusterMode: boolean;
}

/** Which ServiceNoLocalEndpoints metrics a service port contributes to. */
export interface ServiceRenderResult {
  /** nat chains this service port owns in this render. */
  readonly chains: readonly string[];
  readonly noLocalEndpointsInternal: boolean;
  readonly noLocalEndpointsExternal: boolean;
}

/** Writes every rule of one service port; `key` is its servicePortKey. */
export function renderServicePort(
  ctx: ServiceRenderContext,
  key: string,
  sps: ServicePortState,
): ServiceRenderResult {
  const { config, buffers: b } = ctx;
  const info = sps.info;
  const name = servicePortNameString(info.name);
  const protocol = info.protocol.toLowerCase();
  const proto: RulePart = ["-m", protocol, "-p", protocol];
  const port = String(info.port);
  const comment = (text: string): RulePart => ["-m", "comment", "--comment", text];

  const externallyAccessible = info.nodePort !== 0 || info.loadBalancerIPs.length > 0 ||
    info.externalIPs.length > 0;
  const externalPolicyLocal = info.externalPolicyLocal && externallyAccessible;
  const internalPolicyLocal = info.internalPolicyLocal;
  const usesClusterEndpoints = !internalPolicyLocal ||
    (externallyAccessible && !externalPolicyLocal);
  const usesLocalEndpoints = internalPolicyLocal || externalPolicyLocal;

  const hasEndpoints = sps.hasAnyEndpoints;
  const clusterPolicyChain = servicePortPolicyClusterChain(name, protocol);
  const usesClusterPolicyChain = sps.clusterEndpoints.length > 0 && usesClusterEndpoints;
  const localPolicyChain = servicePortPolicyLocalChain(name, protocol);
  const usesLocalPolicyChain = sps.localEndpoints.length > 0 && usesLocalEndpoints;

  const internalTrafficChain = internalPolicyLocal ? localPolicyChain : clusterPolicyChain;
  const hasInternalEndpoints = hasEndpoints &&
    !(internalPolicyLocal && sps.localEndpoints.length === 0);
  const externalPolicyChain = externalPolicyLocal ? localPolicyChain : clusterPolicyChain;
  const hasExternalEndpoints = hasEndpoints &&
    !(externalPolicyLocal && sps.localEndpoints.length === 0);
  const externalTrafficChain = serviceExternalChain(name, protocol);
  const usesExternalTrafficChain = hasEndpoints && externallyAccessible;

  const fwChain = serviceFirewallChain(name, protocol);
  const usesFWChain = hasEndpoints && info.loadBalancerIPs.length > 0 &&
    info.loadBalancerSourceRanges.length > 0;
  const loadBalancerTrafficChain = usesFWChain ? fwChain : externalTrafficChain;

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

  // Capture the clusterIP.
  const clusterIPMatch: RulePart = [...proto, "-d", info.clusterIP, "--dport", port];
  if (hasInternalEndpoints) {
    b.nat(
      null,
      "-A",
      KUBE_SERVICES,
      comment(quoted(`${name} cluster IP`)),
      clusterIPMatch,
      "-j",
      internalTrafficChain,
    );
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
    const match: RulePart = [...proto, "-d", ip, "--dport", port];
    if (hasEndpoints) {
      b.nat(
        null,
        "-A",
        KUBE_SERVICES,
        comment(quoted(`${name} external IP`)),
        match,
        "-j",
        externalTrafficChain,
      );
    }
    if (!hasExternalEndpoints) {
      b.filter(
        "-A",
        KUBE_EXTERNAL_SERVICES,
        comment(externalFilterComment),
        match,
        "-j",
        externalFilterTarget,
      );
    }
  }

  // Capture load balancer ingress.
  for (const ip of info.loadBalancerIPs) {
    const match: RulePart = [...proto, "-d", ip, "--dport", port];
    if (hasEndpoints) {
      b.nat(
        null,
        "-A",
        KUBE_SERVICES,
        comment(quoted(`${name} loadbalancer IP`)),
        match,
        "-j",
        loadBalancerTrafficChain,
      );
    }
    if (usesFWChain) {
      b.filter(
        "-A",
        KUBE_PROXY_FIREWALL,
        comment(quoted(`${name} traffic not accepted by ${fwChain}`)),
        match,
        "-j",
        "DROP",
      );
    }
  }
  if (!hasExternalEndpoints) {
    for (const ip of info.loadBalancerIPs) {
      b.filter(
        "-A",
        KUBE_EXTERNAL_SERVICES,
        comment(externalFilterComment),
        proto,
        "-d",
        ip,
        "--dport",
        port,
        "-j",
        externalFilterTarget,
      );
    }
  }

  // Capture NodePorts. (They are not subject to loadBalancerSourceRanges, as upstream.)
  if (info.nodePort !== 0) {
    const nodePort = String(info.nodePort);
    if (hasEndpoints) {
      b.nat(
        null,
        "-A",
        KUBE_NODEPORTS,
        comment(name),
        proto,
        "--dport",
        nodePort,
        "-j",
        externalTrafficChain,
      );
    }
    if (!hasExternalEndpoints) {
      b.filter(
        "-A",
        KUBE_EXTERNAL_SERVICES,
        comment(externalFilterComment),
        "-m",
        "addrtype",
        "--dst-type",
        "LOCAL",
        proto,
        "--dport",
        nodePort,
        "-j",
        externalFilterTarget,
      );
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

  // From here on: the service's own chains.
  const chains: string[] = [];
  const declare = (chain: string) => {
    b.natChain(key, chain);
    chains.push(chain);
  };

  if (hasInternalEndpoints) {
    const args: RulePart = [comment(quoted(`${name} cluster IP`)), clusterIPMatch].flat();
    if (config.masqueradeAll) {
      b.nat(key, "-A", internalTrafficChain, args, "-j", KUBE_MARK_MASQ);
    } else if (config.ifNotLocal !== null) {
      // Off-cluster traffic to a service VIP may bounce off-node: masquerade it.
      b.nat(key, "-A", internalTrafficChain, args, config.ifNotLocal, "-j", KUBE_MARK_MASQ);
    }
  }

  if (usesExternalTrafficChain) {
    declare(externalTrafficChain);
    if (!externalPolicyLocal) {
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
          clusterPolicyChain,
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
        clusterPolicyChain,
      );
    }
    if (hasExternalEndpoints) {
      b.nat(key, "-A", externalTrafficChain, "-j", externalPolicyChain);
    }
  }

  if (usesFWChain) {
    declare(fwChain);
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
    key,
    name,
    protocol,
    info,
    largeClusterMode: ctx.largeClusterMode,
  };
  if (usesClusterPolicyChain) {
    declare(clusterPolicyChain);
    writeServiceToEndpointRules(endpointCtx, clusterPolicyChain, sps.clusterEndpoints);
  }
  if (usesLocalPolicyChain) {
    declare(localPolicyChain);
    writeServiceToEndpointRules(endpointCtx, localPolicyChain, sps.localEndpoints);
  }
  for (const ep of sps.allReachableEndpoints) {
    declare(writeEndpointChain(endpointCtx, ep));
  }

  return {
    chains,
    noLocalEndpointsInternal: hasEndpoints && !hasInternalEndpoints,
    noLocalEndpointsExternal: hasEndpoints && !hasExternalEndpoints,
  };
}
