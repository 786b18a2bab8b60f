/**
 * The vocabulary `trace` speaks: a packet, and the decision service routing makes for it. The
 * reference model (from a ProxyState) and every mode's tracer (from what the kernel holds or
 * the mode rendered) return the same TraceDecision, so they can be compared field by field.
 */
import type { IPFamily } from "../proxy/mod.ts";

/** Where a traced packet enters the node's rules. */
export type TraceSource = "pod" | "node" | "external";

/** A transport protocol, lower case as on the command line. */
export type TraceProtocol = "tcp" | "udp" | "sctp";

/** One packet to trace. */
export interface TracePacket {
  readonly family: IPFamily;
  /** Source address. For `pod`, a local pod's IP; for `node`, one of the node's IPs. */
  readonly from: string;
  readonly protocol: TraceProtocol;
  /** Destination address and port. */
  readonly to: string;
  readonly port: number;
  readonly source: TraceSource;
}

/** One endpoint that may answer, with the share of new connections it gets. */
export interface TraceEndpoint {
  /** `ip:port` (`[ip]:port` for IPv6). */
  readonly address: string;
  /** In (0, 1]; the shares of one decision sum to 1. */
  readonly probability: number;
}

/** Why a packet that hit a service port is not forwarded. */
export type TraceDropReason =
  /** The service port has no usable endpoint anywhere: REJECT. */
  | "no-endpoints"
  /** A Local traffic policy and no local endpoint: DROP. */
  | "no-local-endpoints"
  /** The source is outside loadBalancerSourceRanges: DROP. */
  | "source-range"
  /** A ClusterIP (or other service IP) on a port no service uses: REJECT (or DROP). */
  | "unused-port"
  /** nftables: an address of a ServiceCIDR that no Service holds: DROP. */
  | "unallocated-cluster-ip";

/** The decision for one packet. */
export type TraceDecision =
  /** No service rule matches: the packet goes on untouched. */
  | { readonly kind: "pass" }
  | {
    readonly kind: "forward";
    /** `ns/name:port` of the service port hit. */
    readonly servicePort: string;
    /** Sorted by address. */
    readonly endpoints: readonly TraceEndpoint[];
    /**
     * The source is rewritten to the node's address for every endpoint (off-cluster traffic,
     * masquerade-all). Hairpin SNAT is not counted here: it is implied for an endpoint whose IP
     * is the packet's `from`.
     */
    readonly masquerade: boolean;
    /** ClientIP affinity timeout in seconds; 0 when the service has none. */
    readonly affinitySeconds: number;
  }
  | {
    readonly kind: "reject" | "drop";
    /** `ns/name:port`, or "" for an unused port of a service IP. */
    readonly servicePort: string;
    readonly reason: TraceDropReason;
  };

/** A tracer's answer: the decision and the objects the packet went through, in order. */
export interface TraceResult {
  readonly decision: TraceDecision;
  /** e.g. ["KUBE-SERVICES", "KUBE-SVC-…", "KUBE-SEP-…"], a map element, or a virtual server. */
  readonly path: readonly string[];
}
