/**
 * What kube-proxy reads from its own Node: labels for topology, addresses and podCIDRs per
 * family, and the deletion/taint signals the /healthz eligibility check needs.
 */
import type { V1Node } from "@kubernetes/client-node";
import { canonicalIP, cidrString, ipFamily, parseCIDR } from "../net/mod.ts";
import type { IPFamily, NodeInfo } from "./types.ts";
import {
  dnsSubdomain,
  invalid,
  optArray,
  optRecord,
  optString,
  optStringMap,
  runValidation,
  type Validation,
} from "./_validation_rules.ts";

/** A Node taint as /healthz looks at it (ToBeDeletedByClusterAutoscaler). */
export interface NodeTaint {
  readonly key: string;
  readonly effect: string;
}

/** This node as the health server and the snapshots see it, after validation. */
export interface NodeStatus {
  readonly name: string;
  readonly labels: Readonly<Record<string, string>>;
  /** InternalIP addresses first, then ExternalIP ones; canonical, without duplicates. */
  readonly addresses: readonly string[];
  /** spec.podCIDRs (or spec.podCIDR), canonical. */
  readonly podCIDRs: readonly string[];
  /** RFC 3339 time, present once the node is being deleted. */
  readonly deletionTimestamp?: string;
  readonly taints: readonly NodeTaint[];
}

function readTimestamp(value: unknown, field: string): string | undefined {
  if (value === undefined || value === null) return undefined;
  if (value instanceof Date && !Number.isNaN(value.getTime())) return value.toISOString();
  if (typeof value === "string" && !Number.isNaN(Date.parse(value))) return value;
  return invalid(
    field,
    value,
    "is not a valid time: expected an RFC 3339 timestamp, YYYY-MM-DDThh:mm:ssZ",
  );
}

/** Validates a Node; a bad address, CIDR, label or taint rejects it with a reason. */
export function validateNode(node: V1Node): Validation<NodeStatus> {
  const rawName = typeof node?.metadata?.name === "string" ? node.metadata.name : "";
  return runValidation(() => `Node ${JSON.stringify(rawName)}`, () => {
    const meta = optRecord(node?.metadata, "metadata");
    const name = dnsSubdomain(meta.name, "metadata.name");
    const labels = optStringMap(meta.labels, "metadata.labels");
    const deletionTimestamp = readTimestamp(meta.deletionTimestamp, "metadata.deletionTimestamp");

    const status = optRecord(node.status, "status");
    const byType: Record<string, string[]> = { InternalIP: [], ExternalIP: [] };
    optArray(status.addresses, "status.addresses").forEach((raw, i) => {
      const addr = optRecord(raw, `status.addresses[${i}]`);
      const type = optString(addr.type, `status.addresses[${i}].type`) ?? "";
      const list = byType[type];
      if (!list) return; // Hostname, InternalDNS, ...: not addresses the proxy binds to.
      const text = optString(addr.address, `status.addresses[${i}].address`);
      const ip = text === undefined ? null : canonicalIP(text);
      if (ip === null) {
        invalid(`status.addresses[${i}].address`, addr.address, "is not a valid IP address");
      }
      list.push(ip);
    });
    const addresses = [...new Set([...byType.InternalIP!, ...byType.ExternalIP!])];

    const spec = optRecord(node.spec, "spec");
    const cidrList = optArray(spec.podCIDRs, "spec.podCIDRs");
    const single = optString(spec.podCIDR, "spec.podCIDR");
    const [cidrSource, cidrField] = cidrList.length > 0 || single === undefined || single === ""
      ? [cidrList, "spec.podCIDRs"]
      : [[single], "spec.podCIDR"];
    const podCIDRs = cidrSource.map((raw, i) => {
      const f = cidrField === "spec.podCIDR" ? cidrField : `${cidrField}[${i}]`;
      const text = optString(raw, f);
      const cidr = text === undefined ? null : parseCIDR(text);
      if (cidr === null) {
        invalid(f, raw, "is not a valid CIDR: expected a block such as 10.0.1.0/24");
      }
      return cidrString(cidr);
    });

    const taints = optArray(spec.taints, "spec.taints").map((raw, i) => {
      const t = optRecord(raw, `spec.taints[${i}]`);
      return {
        key: optString(t.key, `spec.taints[${i}].key`) ?? "",
        effect: optString(t.effect, `spec.taints[${i}].effect`) ?? "",
      };
    });
    const out: NodeStatus = { name, labels, addresses, podCIDRs, taints };
    return deletionTimestamp === undefined ? out : { ...out, deletionTimestamp };
  });
}

/**
 * The NodeInfo one family's proxier uses: the primary IP override (--bind-address) when it is of
 * that family, else the Node's addresses of that family, else the configured fallback
 * (--node-ip) of that family; podCIDRs of that family.
 */
export function nodeInfoForFamily(
  nodeName: string,
  status: NodeStatus | undefined,
  family: IPFamily,
  fallbackNodeIPs: readonly string[],
  primaryNodeIP?: string,
): NodeInfo {
  const ofFamily = (ips: readonly string[]) => ips.filter((ip) => ipFamily(ip) === family);
  const fromNode = ofFamily(status?.addresses ?? []);
  const override = primaryNodeIP === undefined ? [] : ofFamily([primaryNodeIP]);
  return {
    name: nodeName,
    labels: status?.labels ?? {},
    ips: override.length > 0
      ? override
      : fromNode.length > 0
      ? fromNode
      : ofFamily(fallbackNodeIPs),
    podCIDRs: (status?.podCIDRs ?? []).filter((c) => parseCIDR(c)?.family === family),
  };
}
