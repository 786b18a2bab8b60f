/**
 * Local traffic detection (--detect-local-mode): the iptables matches that tell traffic from
 * this cluster's pods apart from everything else, as upstream's LocalTrafficDetector. Pure.
 *
 * NodeCIDR differs from upstream in one way: upstream waits (up to 5 minutes) at startup for the
 * Node to get a podCIDR and exits when it changes; here the detector is a no-op until the Node
 * has a podCIDR of the family, and a podCIDR change simply re-renders (the tracker forces a full
 * sync whenever the Node's info changes).
 */
import { cidrString, parseCIDR } from "../net/mod.ts";
import type { IPFamily } from "../proxy/mod.ts";

/** The --detect-local-mode values, spelled as upstream's KubeProxyConfiguration. */
export type DetectLocalMode =
  | "ClusterCIDR"
  | "NodeCIDR"
  | "BridgeInterface"
  | "InterfaceNamePrefix";

/** The detector's inputs besides the mode; only the ones the mode uses are read. */
export interface LocalDetectorInputs {
  readonly mode: DetectLocalMode;
  /** --cluster-cidr values (ClusterCIDR); the first one of the family is used. */
  readonly clusterCIDRs?: readonly string[];
  /** The Node's spec.podCIDRs (NodeCIDR); the first one of the family is used. */
  readonly nodePodCIDRs?: readonly string[];
  /** --pod-bridge-interface (BridgeInterface). */
  readonly bridgeInterface?: string;
  /** --pod-interface-name-prefix (InterfaceNamePrefix). */
  readonly interfaceNamePrefix?: string;
}

/**
 * Match arguments for pod-sourced traffic and for everything else; both null when the
 * detector cannot tell (no CIDR of the family known): then no rule depends on locality.
 */
export interface LocalTrafficDetector {
  readonly ifLocal: readonly string[] | null;
  readonly ifNotLocal: readonly string[] | null;
}

/** The detector that knows nothing: off-cluster traffic is not masqueraded by locality. */
export const NO_OP_LOCAL_DETECTOR: LocalTrafficDetector = { ifLocal: null, ifNotLocal: null };

/** Interface name characters (no space, quote or "+"), nothing that could reach a rule as more. */
const IFACE_CHARS = /^[A-Za-z0-9_.@:-]+$/;

function byCIDR(cidrs: readonly string[], family: IPFamily, what: string): LocalTrafficDetector {
  for (const raw of cidrs) {
    const c = parseCIDR(raw.trim());
    if (c === null) throw new RangeError(`Invalid ${what} "${raw}": expected a CIDR`);
    if (c.family !== family) continue;
    const text = cidrString(c);
    return { ifLocal: ["-s", text], ifNotLocal: ["!", "-s", text] };
  }
  return NO_OP_LOCAL_DETECTOR;
}

/** `-i name` matches; `maxLength` leaves room for the kernel's 15-character limit. */
function byInterface(
  name: string,
  maxLength: number,
  what: string,
  suffix = "",
): LocalTrafficDetector {
  if (!IFACE_CHARS.test(name) || name.length > maxLength) {
    throw new RangeError(
      `Invalid ${what} "${name}": expected 1 to ${maxLength} letters, digits or "_.@:-"`,
    );
  }
  const match = name + suffix;
  return { ifLocal: ["-i", match], ifNotLocal: ["!", "-i", match] };
}

/** Builds the detector of one family for the configured mode. */
export function localTrafficDetector(
  inputs: LocalDetectorInputs,
  family: IPFamily,
): LocalTrafficDetector {
  switch (inputs.mode) {
    case "ClusterCIDR":
      return byCIDR(inputs.clusterCIDRs ?? [], family, "cluster CIDR");
    case "NodeCIDR":
      return byCIDR(inputs.nodePodCIDRs ?? [], family, "node podCIDR");
    case "BridgeInterface":
      return byInterface(inputs.bridgeInterface ?? "", 15, "bridge interface");
    case "InterfaceNamePrefix":
      // iptables spells "every interface whose name starts with" as a trailing "+".
      return byInterface(inputs.interfaceNamePrefix ?? "", 14, "interface name prefix", "+");
    default: {
      const mode: never = inputs.mode;
      throw new RangeError(
        `Invalid detect-local mode "${mode}": expected ClusterCIDR, NodeCIDR, BridgeInterface or InterfaceNamePrefix`,
      );
    }
  }
}

/** What a mode's options hold for the detector, as the flags name them; absent is the default. */
export interface LocalDetectOptions {
  /** --cluster-cidr values; the first one of the family tells pod traffic apart. */
  readonly clusterCIDRs?: readonly string[];
  /**
   * --detect-local-mode (default ClusterCIDR). NodeCIDR reads the Node's podCIDRs;
   * BridgeInterface and InterfaceNamePrefix need the two options below.
   */
  readonly detectLocalMode?: DetectLocalMode;
  /** --pod-bridge-interface, for detectLocalMode BridgeInterface. */
  readonly bridgeInterface?: string;
  /** --pod-interface-name-prefix, for detectLocalMode InterfaceNamePrefix. */
  readonly interfaceNamePrefix?: string;
}

/** The detector of `family` for a mode's options and the Node's spec.podCIDRs. */
export function localDetectorFor(
  options: LocalDetectOptions,
  nodePodCIDRs: readonly string[],
  family: IPFamily,
): LocalTrafficDetector {
  return localTrafficDetector({
    mode: options.detectLocalMode ?? "ClusterCIDR",
    clusterCIDRs: options.clusterCIDRs ?? [],
    nodePodCIDRs,
    bridgeInterface: options.bridgeInterface ?? "",
    interfaceNamePrefix: options.interfaceNamePrefix ?? "",
  }, family);
}
