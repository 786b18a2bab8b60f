/**
 * The part of the table that does not depend on services: base chains with upstream 1.34's
 * hooks and priorities, the fixed dispatch chains, and the declarations of every shared set
 * and map. Their count is constant; services only add elements (and shared chains per
 * endpoint count, see render_service.ts).
 */
import type { ObjectCollector } from "./_table_objects.ts";
import {
  CLUSTER_IPS,
  CLUSTER_IPS_CHECK,
  endpointMapName,
  FIREWALL_ALLOW,
  FIREWALL_CHECK,
  FIREWALL_IPS,
  HAIRPIN_CONNECTIONS,
  MARK_FOR_MASQUERADE,
  MASQUERADING,
  NFT_PROTOCOLS,
  NO_ENDPOINT_NODEPORTS,
  NO_ENDPOINT_SERVICES,
  NODEPORT_ENDPOINTS_CHECK,
  NODEPORT_IPS,
  REJECT_CHAIN,
  SERVICE_ENDPOINTS_CHECK,
  SERVICE_IPS,
  SERVICE_NODEPORTS,
  SERVICES_CHAIN,
  SYNC_STAMP,
} from "./_names.ts";
import type { NftRenderConfig } from "./render_options.ts";
import { nftQuote } from "./table_model.ts";

/** Collects base chains, fixed chains, set declarations and the NodePort IPs into `b`. */
export function renderBase(b: ObjectCollector, c: NftRenderConfig): void {
  const ip = c.ipWord;
  const daddrKey = `${ip} daddr . meta l4proto . th dport`;
  const nodePortMatch = c.nodePortIPs === null
    ? `fib daddr type local ${ip} daddr != ${c.loopback}`
    : `${ip} daddr @${NODEPORT_IPS}`;
  const newConn = "ct state new";

  // Base chains (1.34+: filter pre-DNAT at -110, the rest of filter at 0, nat at ∓100).
  b.chain("filter-prerouting-pre-dnat", [`${newConn} jump ${FIREWALL_CHECK}`], {
    type: "filter",
    hook: "prerouting",
    priority: -110,
  });
  b.chain("filter-output-pre-dnat", [`${newConn} jump ${FIREWALL_CHECK}`], {
    type: "filter",
    hook: "output",
    priority: -110,
  });
  b.chain("filter-input", [
    `${newConn} jump ${NODEPORT_ENDPOINTS_CHECK}`,
    `${newConn} jump ${SERVICE_ENDPOINTS_CHECK}`,
  ], { type: "filter", hook: "input", priority: 0 });
  b.chain("filter-forward", [
    `${newConn} jump ${SERVICE_ENDPOINTS_CHECK}`,
    `${newConn} jump ${CLUSTER_IPS_CHECK}`,
  ], { type: "filter", hook: "forward", priority: 0 });
  b.chain("filter-output", [
    `${newConn} jump ${SERVICE_ENDPOINTS_CHECK}`,
    `${newConn} jump ${CLUSTER_IPS_CHECK}`,
  ], { type: "filter", hook: "output", priority: 0 });
  b.chain("nat-prerouting", [`jump ${SERVICES_CHAIN}`], {
    type: "nat",
    hook: "prerouting",
    priority: -100,
  });
  b.chain("nat-output", [`jump ${SERVICES_CHAIN}`], {
    type: "nat",
    hook: "output",
    priority: -100,
  });
  b.chain("nat-postrouting", [`jump ${MASQUERADING}`], {
    type: "nat",
    hook: "postrouting",
    priority: 100,
  });

  // Fixed chains.
  const services: string[] = [];
  if (c.masqueradeAll) {
    services.push(
      `${ip} daddr @${CLUSTER_IPS} jump ${MARK_FOR_MASQUERADE} comment ${
        nftQuote("masquerade all clusterIP traffic")
      }`,
    );
  } else if (c.ifNotLocal !== null) {
    services.push(
      `${ip} daddr @${CLUSTER_IPS} ${c.ifNotLocal} jump ${MARK_FOR_MASQUERADE} comment ${
        nftQuote("masquerade clusterIP traffic from outside cluster")
      }`,
    );
  }
  services.push(`${daddrKey} vmap @${SERVICE_IPS}`);
  services.push(`${nodePortMatch} meta l4proto . th dport vmap @${SERVICE_NODEPORTS}`);
  b.chain(SERVICES_CHAIN, services);
  b.chain(SERVICE_ENDPOINTS_CHECK, [`${daddrKey} vmap @${NO_ENDPOINT_SERVICES}`]);
  b.chain(NODEPORT_ENDPOINTS_CHECK, [
    `${nodePortMatch} meta l4proto . th dport vmap @${NO_ENDPOINT_NODEPORTS}`,
  ]);
  b.chain(REJECT_CHAIN, ["reject"]);
  b.chain(FIREWALL_CHECK, [
    `${daddrKey} @${FIREWALL_IPS} ${daddrKey} . ${ip} saddr != @${FIREWALL_ALLOW} drop`,
  ]);
  const clusterIPsCheck = [
    `${ip} daddr @${CLUSTER_IPS} reject comment ${
      nftQuote("Reject traffic to invalid ports of ClusterIPs")
    }`,
  ];
  if (c.serviceCIDRs.length > 0) {
    clusterIPsCheck.push(
      `${ip} daddr { ${c.serviceCIDRs.join(", ")} } drop comment ${
        nftQuote("Drop traffic to unallocated ClusterIPs")
      }`,
    );
  }
  b.chain(CLUSTER_IPS_CHECK, clusterIPsCheck);
  b.chain(MARK_FOR_MASQUERADE, [`mark set mark or ${c.mark}`]);
  b.chain(MASQUERADING, [
    `ct status dnat ${ip} saddr . ${ip} daddr . meta l4proto . th dport @${HAIRPIN_CONNECTIONS} jump ${MARK_FOR_MASQUERADE}`,
    `mark and ${c.mark} == 0 return`,
    `mark set mark xor ${c.mark}`,
    "masquerade fully-random",
  ]);

  // Sets and maps.
  const a = c.addrType;
  const key3 = `${a} . inet_proto . inet_service`;
  const comment = (text: string) => `comment ${nftQuote(text)}`;
  b.set(CLUSTER_IPS, "set", [`type ${a}`, comment("Active ClusterIPs")]);
  b.set(NODEPORT_IPS, "set", [`type ${a}`, comment("IPs that accept NodePort traffic")]);
  b.set(SERVICE_IPS, "map", [
    `type ${key3} : verdict`,
    comment("ClusterIP, ExternalIP and LoadBalancer IP traffic"),
  ]);
  b.set(SERVICE_NODEPORTS, "map", [
    "type inet_proto . inet_service : verdict",
    comment("NodePort traffic"),
  ]);
  b.set(NO_ENDPOINT_SERVICES, "map", [
    `type ${key3} : verdict`,
    comment("vmap to drop or reject packets to services with no endpoints"),
  ]);
  b.set(NO_ENDPOINT_NODEPORTS, "map", [
    "type inet_proto . inet_service : verdict",
    comment("vmap to drop or reject packets to service nodeports with no endpoints"),
  ]);
  b.set(FIREWALL_IPS, "set", [
    `type ${key3}`,
    comment("destinations that are subject to LoadBalancerSourceRanges"),
  ]);
  b.set(FIREWALL_ALLOW, "set", [
    `type ${key3} . ${a}`,
    "flags interval",
    comment("sources allowed by LoadBalancerSourceRanges"),
  ]);
  for (const p of NFT_PROTOCOLS) {
    b.set(endpointMapName(false, p), "map", [
      `typeof ${ip} daddr . ${p} dport . numgen random mod 1 : ${ip} daddr . ${p} dport`,
      comment(`${p} endpoints of ClusterIP, ExternalIP and LoadBalancer IP traffic, by index`),
    ]);
    b.set(endpointMapName(true, p), "map", [
      `typeof ${p} dport . numgen random mod 1 : ${ip} daddr . ${p} dport`,
      comment(`${p} endpoints of NodePort traffic, by index`),
    ]);
  }
  b.set(SYNC_STAMP, "map", [
    "type mark : mark",
    comment("fingerprint of this table as kube-proxy last wrote it"),
  ]);
  b.set(HAIRPIN_CONNECTIONS, "set", [
    `type ${a} . ${a} . inet_proto . inet_service`,
    comment("service hairpin connections"),
  ]);
  if (c.nodePortIPs !== null) {
    for (const nodeIP of c.nodePortIPs) b.element(NODEPORT_IPS, nodeIP);
  }
}
