/**
 * The brain's one entry point: it takes source events, keeps the validated Services, slices and
 * Node, and hands out an immutable ProxyState per IP family. Each family remembers its previous
 * snapshot, so only Services touched since then are recomputed and unchanged ServicePortState
 * objects are reused (a one-service change among 10,000 stays cheap).
 */
import { canonicalIP } from "../net/mod.ts";
import { type ObjectEvent, type ObjectKind, selectedByProxyLabels } from "../source/mod.ts";
import { deepEqual } from "./deep_equal.ts";
import { EndpointSliceCache } from "./endpoint_slice_cache.ts";
import { nodeInfoForFamily, type NodeStatus, validateNode } from "./node_status.ts";
import { PendingChanges } from "./pending_changes.ts";
import { ServiceCIDRStore, validateServiceCIDR } from "./service_cidrs.ts";
import { categorizeEndpoints, type TopologyOptions } from "./topology.ts";
import type { IPFamily, ProxyState, ServicePort, ServicePortState } from "./types.ts";
import { servicePortKey } from "./types.ts";
import {
  lastChangeTriggerTime,
  type ValidatedEndpointSlice,
  validateEndpointSlice,
} from "./validate_endpoint_slice.ts";
import { type ValidatedService, validateService } from "./validate_service.ts";
import { rawObjectKey } from "./validation_rules.ts";

/** How the app configures the tracker. */
export interface ProxyTrackerOptions {
  /** This node's name (--hostname-override or the hostname): locality and the Node to watch. */
  readonly nodeName: string;
  /** --node-ip: the node's addresses when the Node object gives none of a family. */
  readonly fallbackNodeIPs?: readonly string[];
  /**
   * --bind-address when not 0.0.0.0 or ::: the node's primary IP, in place of whatever the
   * Node object or --node-ip say for its family (upstream's detectNodeIPs).
   */
  readonly primaryNodeIP?: string;
  /** Endpoint selection settings from feature gates (PreferSameTrafficDistribution). */
  readonly topology?: TopologyOptions;
  /** Called for each rejected object; the previous good version stays in effect. */
  readonly onInvalid?: (kind: ObjectKind, key: string, reason: string) => void;
  /**
   * Epoch ms the proxy started; trigger times not after it are dropped, as upstream does, so the
   * initial list does not report huge programming latencies. Default: keep all.
   */
  readonly startTimeMs?: number;
}

/** What the app asks of the brain. */
export interface ProxyTracker {
  /**
   * Applies one source event (Node events only for this node). Returns whether a sync is due, as
   * upstream's handlers decide it: a Service or slice change that left something pending, a
   * changed Node status, any ServiceCIDR event. An update that changes nothing (a relist's new
   * resourceVersion, a Node heartbeat) returns false.
   */
  handleEvent(event: ObjectEvent): boolean;
  /** The source delivered the initial state of `kind`. */
  markSynced(kind: ObjectKind): void;
  /** True once Services and EndpointSlices have synced: no rules are written before that. */
  isSynced(): boolean;
  /** Builds the family's snapshot and consumes that family's pending changes. */
  snapshot(family: IPFamily): ProxyState;
  /** Services / services-with-slice-changes queued since the last snapshot (for metrics). */
  pending(): { services: number; endpoints: number };
  /** This node as last seen (undefined before its first event or after deletion). */
  node(): NodeStatus | undefined;
  /** Trigger times (epoch ms) of slices changed since the last call, then forgets them. */
  takeChangeTriggerTimes(): number[];
}

const FAMILIES: readonly IPFamily[] = ["IPv4", "IPv6"];

interface FamilyState {
  previous: ProxyState | undefined;
  readonly services: PendingChanges<readonly ServicePort[]>;
  readonly slices: PendingChanges<ValidatedEndpointSlice>;
  /** The servicePortKeys each Service contributed to the previous snapshot. */
  readonly portKeysByService: Map<string, readonly string[]>;
}

/** Creates a tracker; it does no I/O and starts nothing. */
export function createProxyTracker(options: ProxyTrackerOptions): ProxyTracker {
  const nodeName = options.nodeName;
  const onInvalid = options.onInvalid ?? (() => {});
  const startTimeMs = options.startTimeMs ?? -Infinity;
  const fallbackNodeIPs = (options.fallbackNodeIPs ?? []).map((ip) => {
    const c = canonicalIP(ip);
    if (c === null) {
      throw new Error(`Invalid node IP ${JSON.stringify(ip)}: expected an IPv4 or IPv6 address`);
    }
    return c;
  });
  const primaryNodeIP = options.primaryNodeIP === undefined
    ? undefined
    : canonicalIP(options.primaryNodeIP) ?? undefined;
  const topology = options.topology ?? {};

  const services = new Map<string, ValidatedService>();
  const slices = new EndpointSliceCache(nodeName);
  const serviceCIDRs = new ServiceCIDRStore();
  const synced = new Set<ObjectKind>();
  let nodeStatus: NodeStatus | undefined;
  let triggerTimes: number[] = [];
  const families = new Map<IPFamily, FamilyState>(FAMILIES.map((f) => [f, {
    previous: undefined,
    services: new PendingChanges(),
    slices: new PendingChanges(),
    portKeysByService: new Map(),
  }]));
  const fam = (f: IPFamily) => families.get(f)!;

  /** Families whose pending changes matter: the snapshotted ones, or all before any snapshot. */
  const countedFamilies = (): [IPFamily, FamilyState][] => {
    const all = [...families];
    const active = all.filter(([, st]) => st.previous !== undefined);
    return active.length > 0 ? active : all;
  };

  const setService = (key: string, after: ValidatedService | undefined) => {
    const before = services.get(key);
    if (after) services.set(key, after);
    else services.delete(key);
    for (const [f, st] of countedFamilies()) {
      st.services.record(key, before?.ports[f], after?.ports[f]);
    }
  };

  const setSlice = (
    key: string,
    after: ValidatedEndpointSlice | undefined,
    triggerTime?: number,
  ) => {
    const before = after ? slices.set(after) : slices.delete(key);
    if (
      after && triggerTime !== undefined && triggerTime > startTimeMs && !deepEqual(before, after)
    ) {
      triggerTimes.push(triggerTime);
    }
    for (const [f, st] of countedFamilies()) {
      const of = (s: ValidatedEndpointSlice | undefined) => s?.addressType === f ? s : undefined;
      st.slices.record(key, of(before), of(after));
    }
  };

  const handleService = (event: Extract<ObjectEvent, { kind: "Service" }>) => {
    const key = rawObjectKey(event.object?.metadata);
    if (event.type === "DELETED" || !selectedByProxyLabels(event.object?.metadata?.labels)) {
      setService(key, undefined);
      return;
    }
    const res = validateService(event.object);
    if (!res.ok) onInvalid("Service", key, res.reason);
    else setService(res.value.key, res.value);
  };

  const handleSlice = (event: Extract<ObjectEvent, { kind: "EndpointSlice" }>) => {
    const key = rawObjectKey(event.object?.metadata);
    if (event.type === "DELETED" || !selectedByProxyLabels(event.object?.metadata?.labels)) {
      setSlice(key, undefined);
      return;
    }
    const res = validateEndpointSlice(event.object);
    if (!res.ok) onInvalid("EndpointSlice", key, res.reason);
    else setSlice(res.value.key, res.value, lastChangeTriggerTime(event.object));
  };

  const handleNode = (event: Extract<ObjectEvent, { kind: "Node" }>) => {
    if (event.object?.metadata?.name !== nodeName) return;
    if (event.type === "DELETED") {
      nodeStatus = undefined;
      return;
    }
    const res = validateNode(event.object);
    if (!res.ok) onInvalid("Node", nodeName, res.reason);
    else nodeStatus = res.value;
  };

  const handleServiceCIDR = (event: Extract<ObjectEvent, { kind: "ServiceCIDR" }>) => {
    const name = event.object?.metadata?.name;
    if (event.type === "DELETED") {
      if (typeof name === "string") serviceCIDRs.delete(name);
      return;
    }
    const res = validateServiceCIDR(event.object);
    if (!res.ok) {
      onInvalid("ServiceCIDR", typeof name === "string" ? name : "", res.reason);
      return;
    }
    const { value, skipped } = res.value;
    for (const reason of skipped) onInvalid("ServiceCIDR", value.name, reason);
    serviceCIDRs.set(value);
  };

  /** Recomputes one Service's ports into `out`, reusing unchanged states from `prev`. */
  const recomputeService = (
    family: IPFamily,
    serviceKey: string,
    labels: Readonly<Record<string, string>>,
    prev: ReadonlyMap<string, ServicePortState>,
    out: Map<string, ServicePortState>,
    changed: Set<string>,
  ) => {
    const st = fam(family);
    const oldKeys = st.portKeysByService.get(serviceKey) ?? [];
    const ports = services.get(serviceKey)?.ports[family] ?? [];
    const newKeys: string[] = [];
    if (ports.length > 0) {
      const endpoints = slices.endpointsFor(serviceKey, family);
      for (const info of ports) {
        const key = servicePortKey(info.name);
        const allEndpoints = endpoints.get(key) ?? [];
        const fresh: ServicePortState = {
          info,
          allEndpoints,
          ...categorizeEndpoints(allEndpoints, info, nodeName, labels, topology),
        };
        const old = prev.get(key);
        if (old !== undefined && deepEqual(old, fresh)) out.set(key, old);
        else {
          out.set(key, fresh);
          changed.add(key);
        }
        newKeys.push(key);
      }
    }
    for (const key of oldKeys) {
      if (newKeys.includes(key)) continue;
      out.delete(key);
      changed.add(key);
    }
    if (newKeys.length > 0) st.portKeysByService.set(serviceKey, newKeys);
    else st.portKeysByService.delete(serviceKey);
  };

  const snapshot = (family: IPFamily): ProxyState => {
    const st = fam(family);
    const previous = st.previous;
    const node = nodeInfoForFamily(nodeName, nodeStatus, family, fallbackNodeIPs, primaryNodeIP);
    const labelsChanged = previous !== undefined && !deepEqual(previous.node.labels, node.labels);
    const nodeChanged = previous !== undefined && !deepEqual(previous.node, node);
    const full = previous === undefined || labelsChanged;

    const dirty = new Set<string>();
    if (full) {
      for (const key of services.keys()) dirty.add(key);
      for (const key of st.portKeysByService.keys()) dirty.add(key);
    } else {
      for (const key of st.services.keys()) dirty.add(key);
      for (const [sliceKey, baseline] of st.slices.entries()) {
        if (baseline) dirty.add(baseline.serviceKey);
        const current = slices.get(sliceKey);
        if (current?.addressType === family) dirty.add(current.serviceKey);
      }
    }

    const prevServices: ReadonlyMap<string, ServicePortState> = previous?.services ?? new Map();
    const out = new Map(prevServices);
    const changed = new Set<string>();
    for (const serviceKey of dirty) {
      recomputeService(family, serviceKey, node.labels, prevServices, out, changed);
    }
    let totalEndpoints = 0;
    for (const s of out.values()) totalEndpoints += s.allEndpoints.length;

    const state: ProxyState = {
      family,
      node,
      services: out,
      changed,
      forceFullSync: previous === undefined || nodeChanged,
      totalEndpoints,
      serviceCIDRs: serviceCIDRs.cidrsFor(family),
    };
    st.previous = state;
    st.services.clear();
    st.slices.clear();
    // A family never snapshotted stops queueing once another is active: its first snapshot
    // recomputes everything anyway, and its queue would keep pending() from reaching zero.
    for (const other of families.values()) {
      if (other.previous === undefined) {
        other.services.clear();
        other.slices.clear();
      }
    }
    return state;
  };

  /** Whether any counted family has a Service or slice change pending. */
  const anyPending = () =>
    countedFamilies().some(([, st]) => st.services.size > 0 || st.slices.size > 0);

  return {
    handleEvent(event) {
      if (event.kind === "Service") handleService(event);
      else if (event.kind === "EndpointSlice") handleSlice(event);
      else if (event.kind === "Node") {
        const before = nodeStatus;
        handleNode(event);
        return !deepEqual(before, nodeStatus);
      } else if (event.kind === "ServiceCIDR") {
        handleServiceCIDR(event);
        return true;
      }
      return anyPending();
    },
    markSynced(kind) {
      synced.add(kind);
    },
    isSynced() {
      return synced.has("Service") && synced.has("EndpointSlice");
    },
    snapshot,
    pending() {
      const serviceKeys = new Set<string>();
      const endpointKeys = new Set<string>();
      for (const [, st] of countedFamilies()) {
        for (const key of st.services.keys()) serviceKeys.add(key);
        for (const [sliceKey, baseline] of st.slices.entries()) {
          if (baseline) endpointKeys.add(baseline.serviceKey);
          const current = slices.get(sliceKey);
          if (current) endpointKeys.add(current.serviceKey);
        }
      }
      return { services: serviceKeys.size, endpoints: endpointKeys.size };
    },
    node: () => nodeStatus,
    takeChangeTriggerTimes() {
      const out = triggerTimes;
      triggerTimes = [];
      return out;
    },
  };
}
