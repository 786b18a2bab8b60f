/**
 * The pure address and command plan of a test topology (no I/O, testable without root).
 *
 * IP plan (fixed for every test; see tests' shared fixtures):
 *   node      192.168.0.2/24  fd00:192::2/64  on eth0, the "node LAN" veth to node2
 *   node2     192.168.0.3/24  fd00:192::3/64  on eth0, hosts the remote pods
 *   external  203.0.113.2/32  fd00:203::2/128 on eth0, veth to the node's ext0
 *   pods      10.x.y.z/32     fd00:10::x:y:z/128 (default) on eth0, veth to its node's vethN
 * Routing is point-to-point, like the CNI ptp plugin: no bridge, so pod <-> pod traffic is
 * forwarded (and NATed) by the node. A pod's default route is its node IP (onlink) for IPv4
 * and fe80::1 (on every host-side veth) for IPv6; its node routes `ip/32 dev vethN`.
 * node2 and the remote pods' traffic to anything else goes via the node; the node's default
 * route is `dev eth0`, so unknown destinations fail instead of looping.
 * With `podBridge`, the node's own pods hang off one bridge of that name instead (as the CNI
 * bridge plugin does): their host veths are its ports and their routes point at the bridge.
 * Pods still route via the node (/32 addresses, onlink gateway), so traffic stays routed.
 */
import { canonicalIP, parseIPv4, parseIPv6 } from "../../lib/net/mod.ts";

/** The fixed addresses of the topology's non-pod namespaces. */
export const TOPOLOGY_IPS = {
  node: "192.168.0.2",
  node6: "fd00:192::2",
  node2: "192.168.0.3",
  node26: "fd00:192::3",
  external: "203.0.113.2",
  external6: "fd00:203::2",
  /** The IPv6 gateway every pod and the external client use (link-local on the host veths). */
  gateway6: "fe80::1",
} as const;

/** Namespaces other than pods, by their logical name. */
export type FixedNamespace = "node" | "node2" | "external";

/** A pod the caller asks for. */
export interface PodSpec {
  /** DNS label; also what its echo server answers with. */
  readonly name: string;
  /** IPv4 address inside 10.0.0.0/8. */
  readonly ip: string;
  /** IPv6 address; defaults to fd00:10:: followed by the IPv4's last three octets as written. */
  readonly ip6?: string;
}

/** Options of a topology. */
export interface TopologyOptions {
  /** Unique per test: lower-case letter then up to 7 letters or digits; names every namespace. */
  readonly prefix: string;
  /** Pods on the proxy's node. */
  readonly pods?: readonly PodSpec[];
  /** Pods on node2, reached from the node over the node LAN. */
  readonly remotePods?: readonly PodSpec[];
  /** Give every namespace IPv6 addresses and routes too; default true. */
  readonly ipv6?: boolean;
  /**
   * Attach the node's pods through a bridge with this interface name (e.g. "cbr0") rather
   * than point-to-point veths; default none. node2's pods stay point-to-point.
   */
  readonly podBridge?: string;
}

/** A pod as planned: where it lives and how it is wired. */
export interface PodPlan {
  readonly name: string;
  readonly ip: string;
  /** Null when the topology is IPv4-only. */
  readonly ip6: string | null;
  readonly ns: string;
  /** The node namespace it is attached to. */
  readonly host: "node" | "node2";
  /** Its veth's name on the host side ("veth0", "veth1", ...). */
  readonly hostIface: string;
  /** The bridge its host veth is a port of, or null when attached point-to-point. */
  readonly bridge: string | null;
}

/** Everything needed to build (and tear down) one topology. */
export interface TopologyPlan {
  readonly prefix: string;
  readonly ipv6: boolean;
  /** The node's pod bridge, or null (point-to-point pods). */
  readonly podBridge: string | null;
  readonly namespaces: Readonly<Record<FixedNamespace, string>>;
  readonly pods: readonly PodPlan[];
  /** `sysctl -w` assignments per namespace, applied before any link exists. */
  readonly sysctls: ReadonlyMap<string, readonly string[]>;
  /** `ip -batch` lines creating veth pairs, run in the named namespace (phase 1). */
  readonly links: ReadonlyMap<string, readonly string[]>;
  /** `ip -batch` lines for addresses, link state and routes per namespace (phase 2). */
  readonly config: ReadonlyMap<string, readonly string[]>;
}

const PREFIX_RE = /^[a-z][a-z0-9]{0,7}$/;
const POD_NAME_RE = /^[a-z0-9]([-a-z0-9]{0,30}[a-z0-9])?$/;
const RESERVED = new Set(["node", "node2", "external", "ext"]);
/** A bridge name that cannot clash with the planned interfaces (eth0, ext0, vethN). */
const BRIDGE_RE = /^[a-z][a-z0-9]{0,14}$/;

/** The IPv6 address a pod gets by default: 10.0.1.2 -> fd00:10::1:2. */
export function defaultPodIP6(ip: string): string {
  const [, b, c, d] = ip.split(".");
  return canonicalIP(`fd00:10::${b}:${c}:${d}`)!;
}

/** Namespace name for a logical name of a topology with this prefix. */
export function namespaceName(prefix: string, logical: string): string {
  return `${prefix}-${logical}`;
}

function validate(opts: TopologyOptions): void {
  if (!PREFIX_RE.test(opts.prefix)) {
    throw new Error(
      `Invalid topology prefix "${opts.prefix}": expected a lower-case letter and up to 7 letters or digits`,
    );
  }
  const bridge = opts.podBridge;
  if (
    bridge !== undefined &&
    (!BRIDGE_RE.test(bridge) || ["eth0", "ext0", "lo"].includes(bridge) || /^veth\d/.test(bridge))
  ) {
    throw new Error(
      `Invalid pod bridge "${bridge}": expected up to 15 lower-case letters or digits, not eth0, ext0, lo or vethN`,
    );
  }
  const names = new Set<string>();
  const ips = new Set<string>();
  for (const pod of [...(opts.pods ?? []), ...(opts.remotePods ?? [])]) {
    if (!POD_NAME_RE.test(pod.name) || RESERVED.has(pod.name)) {
      throw new Error(
        `Invalid pod name "${pod.name}": expected a DNS label other than node, node2, external`,
      );
    }
    const v4 = parseIPv4(pod.ip);
    if (!v4 || v4[0] !== 10) {
      throw new Error(`Invalid IP "${pod.ip}" of pod "${pod.name}": expected IPv4 in 10.0.0.0/8`);
    }
    if (pod.ip6 !== undefined && !parseIPv6(pod.ip6)) {
      throw new Error(`Invalid IPv6 "${pod.ip6}" of pod "${pod.name}": expected an IPv6 address`);
    }
    if (names.has(pod.name)) throw new Error(`Duplicate pod name "${pod.name}"`);
    const ip6 = canonicalIP(pod.ip6 ?? defaultPodIP6(pod.ip))!;
    for (const ip of [pod.ip, ip6]) {
      if (ips.has(ip)) throw new Error(`Duplicate pod IP "${ip}" (pod "${pod.name}")`);
      ips.add(ip);
    }
    names.add(pod.name);
  }
}

/** Plans a topology; throws on a bad prefix, pod name or address. */
export function planTopology(opts: TopologyOptions): TopologyPlan {
  validate(opts);
  const ipv6 = opts.ipv6 ?? true;
  const ns = (logical: string) => namespaceName(opts.prefix, logical);
  const namespaces = { node: ns("node"), node2: ns("node2"), external: ns("ext") };
  const hostIP = { node: TOPOLOGY_IPS.node, node2: TOPOLOGY_IPS.node2 };
  const hostIP6 = { node: TOPOLOGY_IPS.node6, node2: TOPOLOGY_IPS.node26 };
  const pods: PodPlan[] = [];
  const counters = { node: 0, node2: 0 };
  const place = (specs: readonly PodSpec[] | undefined, host: "node" | "node2") => {
    for (const p of specs ?? []) {
      pods.push({
        name: p.name,
        ip: p.ip,
        ip6: ipv6 ? canonicalIP(p.ip6 ?? defaultPodIP6(p.ip)) : null,
        ns: ns(p.name),
        host,
        hostIface: `veth${counters[host]++}`,
        bridge: host === "node" ? opts.podBridge ?? null : null,
      });
    }
  };
  place(opts.pods, "node");
  place(opts.remotePods, "node2");

  const sysctls = new Map<string, string[]>();
  const links = new Map<string, string[]>();
  const config = new Map<string, string[]>();
  const all = [namespaces.node, namespaces.node2, namespaces.external, ...pods.map((p) => p.ns)];
  for (const n of all) {
    sysctls.set(
      n,
      ipv6 ? ["net.ipv6.conf.all.accept_dad=0", "net.ipv6.conf.default.accept_dad=0"] : [],
    );
    config.set(n, ["link set lo up"]);
  }
  for (const host of ["node", "node2"] as const) {
    sysctls.get(namespaces[host])!.push(
      "net.ipv4.ip_forward=1",
      ...(ipv6 ? ["net.ipv6.conf.all.forwarding=1"] : []),
    );
    links.set(namespaces[host], []);
  }
  const cfg = (n: string) => config.get(n)!;

  // The node LAN (node eth0 <-> node2 eth0) and the external client (node ext0 <-> ext eth0).
  links.get(namespaces.node)!.push(
    `link add eth0 type veth peer name eth0 netns ${namespaces.node2}`,
    `link add ext0 type veth peer name eth0 netns ${namespaces.external}`,
  );
  for (const host of ["node", "node2"] as const) {
    cfg(namespaces[host]).push(
      `addr add ${hostIP[host]}/24 dev eth0`,
      ...(ipv6 ? [`addr add ${hostIP6[host]}/64 dev eth0 nodad`] : []),
      "link set eth0 up",
    );
  }
  cfg(namespaces.node).push(
    "link set ext0 up",
    `route add ${TOPOLOGY_IPS.external}/32 dev ext0 src ${TOPOLOGY_IPS.node}`,
    "route add default dev eth0",
    ...(ipv6
      ? [
        `addr add ${TOPOLOGY_IPS.gateway6}/64 dev ext0 nodad`,
        `route add ${TOPOLOGY_IPS.external6}/128 dev ext0 src ${TOPOLOGY_IPS.node6}`,
        "route add ::/0 dev eth0",
      ]
      : []),
  );
  cfg(namespaces.node2).push(
    `route add default via ${TOPOLOGY_IPS.node} dev eth0`,
    ...(ipv6 ? [`route add ::/0 via ${TOPOLOGY_IPS.node6} dev eth0`] : []),
  );
  cfg(namespaces.external).push(
    `addr add ${TOPOLOGY_IPS.external}/32 dev eth0`,
    "link set eth0 up",
    `route add default via ${TOPOLOGY_IPS.node} dev eth0 onlink`,
    ...(ipv6
      ? [
        `addr add ${TOPOLOGY_IPS.external6}/128 dev eth0 nodad`,
        `route add ::/0 via ${TOPOLOGY_IPS.gateway6} dev eth0`,
      ]
      : []),
  );

  const podBridge = opts.podBridge ?? null;
  if (podBridge !== null) {
    links.get(namespaces.node)!.push(`link add ${podBridge} type bridge`);
    cfg(namespaces.node).push(
      `link set ${podBridge} up`,
      ...(ipv6 ? [`addr add ${TOPOLOGY_IPS.gateway6}/64 dev ${podBridge} nodad`] : []),
    );
  }
  for (const pod of pods) {
    const host = namespaces[pod.host];
    links.get(host)!.push(`link add ${pod.hostIface} type veth peer name eth0 netns ${pod.ns}`);
    // Routes and the IPv6 gateway live on the bridge when there is one, else on the veth.
    const dev = pod.bridge ?? pod.hostIface;
    cfg(host).push(
      ...(pod.bridge !== null ? [`link set ${pod.hostIface} master ${pod.bridge}`] : []),
      `link set ${pod.hostIface} up`,
      `route add ${pod.ip}/32 dev ${dev} src ${hostIP[pod.host]}`,
      ...(pod.ip6 !== null
        ? [
          ...(pod.bridge === null
            ? [`addr add ${TOPOLOGY_IPS.gateway6}/64 dev ${pod.hostIface} nodad`]
            : []),
          `route add ${pod.ip6}/128 dev ${dev} src ${hostIP6[pod.host]}`,
        ]
        : []),
    );
    if (pod.host === "node2") {
      cfg(namespaces.node).push(
        `route add ${pod.ip}/32 via ${TOPOLOGY_IPS.node2} dev eth0`,
        ...(pod.ip6 !== null
          ? [`route add ${pod.ip6}/128 via ${TOPOLOGY_IPS.node26} dev eth0`]
          : []),
      );
    }
    cfg(pod.ns).push(
      `addr add ${pod.ip}/32 dev eth0`,
      "link set eth0 up",
      `route add default via ${hostIP[pod.host]} dev eth0 onlink`,
      ...(pod.ip6 !== null
        ? [
          `addr add ${pod.ip6}/128 dev eth0 nodad`,
          `route add ::/0 via ${TOPOLOGY_IPS.gateway6} dev eth0`,
        ]
        : []),
    );
  }
  return { prefix: opts.prefix, ipv6, podBridge, namespaces, pods, sysctls, links, config };
}
