/**
 * Builders for raw API objects used by the lib/proxy tests.
 *
 * IP plan: pods 10.0.0.0/8 (IPv6 fd00:10::/64), service IPs 172.30.0.0/16 (IPv6 fd00:30::/108),
 * node 192.168.0.2, external client 203.0.113.2.
 */
import type { V1EndpointSlice, V1Node, V1Service } from "@kubernetes/client-node";
import type { Endpoint, ServicePort } from "../../lib/proxy/mod.ts";
import type { EventType } from "../../lib/source/mod.ts";

/** This node's name in every fixture. */
export const NODE = "node-a";

/** A Service with one TCP port "p80" on 172.30.0.1, with spec overrides. */
export function makeService(
  namespace: string,
  name: string,
  spec: Record<string, unknown> = {},
  extra: Record<string, unknown> = {},
): V1Service {
  return {
    metadata: { namespace, name },
    spec: {
      type: "ClusterIP",
      clusterIP: "172.30.0.1",
      ports: [{ name: "p80", port: 80, protocol: "TCP" }],
      ...spec,
    },
    ...extra,
  } as V1Service;
}

/** One endpoint entry of a raw slice. */
export interface RawEndpoint {
  ip: string;
  ready?: boolean;
  serving?: boolean;
  terminating?: boolean;
  nodeName?: string;
  zone?: string;
  forZones?: string[];
  forNodes?: string[];
}

/** An EndpointSlice for service `svc` with port "p80"/8080 unless `ports` is given. */
export function makeSlice(
  namespace: string,
  name: string,
  svc: string,
  endpoints: RawEndpoint[],
  opts: { addressType?: string; ports?: unknown[]; annotations?: Record<string, string> } = {},
): V1EndpointSlice {
  return {
    metadata: {
      namespace,
      name,
      labels: { "kubernetes.io/service-name": svc },
      ...(opts.annotations ? { annotations: opts.annotations } : {}),
    },
    addressType: opts.addressType ?? "IPv4",
    ports: opts.ports ?? [{ name: "p80", port: 8080, protocol: "TCP" }],
    endpoints: endpoints.map((e) => ({
      addresses: [e.ip],
      conditions: {
        ...(e.ready === undefined ? {} : { ready: e.ready }),
        ...(e.serving === undefined ? {} : { serving: e.serving }),
        ...(e.terminating === undefined ? {} : { terminating: e.terminating }),
      },
      ...(e.nodeName === undefined ? {} : { nodeName: e.nodeName }),
      ...(e.zone === undefined ? {} : { zone: e.zone }),
      ...(e.forZones || e.forNodes
        ? {
          hints: {
            ...(e.forZones ? { forZones: e.forZones.map((n) => ({ name: n })) } : {}),
            ...(e.forNodes ? { forNodes: e.forNodes.map((n) => ({ name: n })) } : {}),
          },
        }
        : {}),
    })),
  } as V1EndpointSlice;
}

/** This node with labels and addresses. */
export function makeNode(
  labels: Record<string, string> = {},
  addresses: { type: string; address: string }[] = [{ type: "InternalIP", address: "192.168.0.2" }],
  extra: { spec?: Record<string, unknown>; deletionTimestamp?: string; name?: string } = {},
): V1Node {
  return {
    metadata: {
      name: extra.name ?? NODE,
      labels,
      ...(extra.deletionTimestamp ? { deletionTimestamp: extra.deletionTimestamp } : {}),
    },
    spec: extra.spec ?? {},
    status: { addresses },
  } as unknown as V1Node;
}

/** A ServicePort for endpoint-selection tests. */
export function makeServicePort(overrides: Partial<ServicePort> = {}): ServicePort {
  return {
    name: { namespace: "ns1", name: "svc1", port: "p80", protocol: "TCP" },
    clusterIP: "172.30.0.1",
    port: 80,
    protocol: "TCP",
    nodePort: 0,
    externalIPs: [],
    loadBalancerIPs: [],
    loadBalancerSourceRanges: [],
    stickyMaxAgeSeconds: 0,
    externalPolicyLocal: false,
    internalPolicyLocal: false,
    healthCheckNodePort: 0,
    ...overrides,
  };
}

/** An Endpoint at `ip`:80, ready and remote unless overridden. */
export function makeEndpoint(ip: string, overrides: Partial<Endpoint> = {}): Endpoint {
  return {
    ip,
    port: 80,
    address: `${ip}:80`,
    ready: true,
    serving: true,
    terminating: false,
    isLocal: false,
    nodeName: "",
    zone: "",
    zoneHints: [],
    nodeHints: [],
    ...overrides,
  };
}

/** A Service source event. */
export function svcEvent(type: EventType, object: V1Service) {
  return { kind: "Service" as const, type, object };
}

/** An EndpointSlice source event. */
export function sliceEvent(type: EventType, object: V1EndpointSlice) {
  return { kind: "EndpointSlice" as const, type, object };
}

/** A Node source event. */
export function nodeEvent(type: EventType, object: V1Node) {
  return { kind: "Node" as const, type, object };
}
