/**
 * The brain's one entry point: it takes source events, keeps the validated Services, slices and
 * Node, and hands out an immutable ProxyState per IP family. Each family remembers its previous
 * snapshot, so only Services touched since then are recomputed and unchanged ServicePortState
 * objects are reused (a one-service change among 10,000 stays cheap).
 */
import { canonicalIP } from "../net/mod.ts";
import { type ObjectEvent, type ObjectKind, selectedByProxyLabels } from "../source/mod.ts";
import { deepEqual } from "./_deep_equal.ts";
import { EndpointSliceCache } from "./_endpoint_slice_cache.ts";
import { nodeInfoForFamily, type NodeStatus, validateNode } from "./node_status.ts";
import { PendingChanges } from "./_pending_changes.ts";
import { ServiceCIDRStore, validateServiceCIDR } from "./_service_cidrs.ts";
import { categorizeEndpoints, type TopologyOptions } from "./topology.ts";
import type { IPFamily, ProxyState, ServicePort, ServicePortState } from "./types.ts";
import { servicePortKey } from "./types.ts";
import {
  lastChangeTriggerTime,
  type ValidatedEndpointSlice,
  validateEndpointSlice,
} from "./validate_endpoint_slice.ts";
import { type ValidatedService, validateService } from "./validate_service.ts";
import { rawObjectKey } from "./_validation_rules.ts";

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

/** What the tracker keeps per IP family between its snapshots. */
interface FamilyState {
  /** The family's last snapshot; undefined before the first. */
  previous: ProxyState | undefined;
  readonly services: PendingChanges<readonly ServicePort[]>;
  readonly slices: PendingChanges<ValidatedEndpointSlice>;
  /** The servicePortKeys each Service contributed to the previous snapshot. */
  readonly portKeysByService: Map<string, readonly string[]>;
}

/** Creates a tracker; it does no I/O and starts nothing. */
export function createProxyTracker(options: ProxyTrackerOptions): ProxyTracker {
  return new ProxyStateTracker(options);
}

/** The brain's state: validated objects, this node, and each family's pending changes. */
class ProxyStateTracker implements ProxyTracker {
  readonly #nodeName: string;
  readonly #onInvalid: (kind: ObjectKind, key: string, reason: string) => void;
  readonly #startTimeMs: number;
  /** --node-ip, canonical. */
  readonly #fallbackNodeIPs: readonly string[];
  readonly #primaryNodeIP: string | undefined;
  readonly #topology: TopologyOptions;
  /** The validated Services, by "namespace/name". */
  readonly #services = new Map<string, ValidatedService>();
  readonly #slices: EndpointSliceCache;
  readonly #serviceCIDRs = new ServiceCIDRStore();
  /** The kinds whose initial state the source delivered. */
  readonly #synced = new Set<ObjectKind>();
  /** #countedFamilies()'s answer until the next snapshot. */
  #counted: readonly [IPFamily, FamilyState][] | undefined;
  readonly #families = new Map<IPFamily, FamilyState>(FAMILIES.map((f) => [f, {
    previous: undefined,
    services: new PendingChanges(),
    slices: new PendingChanges(),
    portKeysByService: new Map(),
  }]));
  /** This node as last seen. */
  #nodeStatus: NodeStatus | undefined;
  /** Trigger times of slices changed since takeChangeTriggerTimes last took them. */
  #triggerTimes: number[] = [];

  constructor(options: ProxyTrackerOptions) {
    this.#nodeName = options.nodeName;
    this.#onInvalid = options.onInvalid ?? (() => {});
    this.#startTimeMs = options.startTimeMs ?? -Infinity;
    this.#fallbackNodeIPs = (options.fallbackNodeIPs ?? []).map((ip) => {
      const c = canonicalIP(ip);
      if (c === null) {
        throw new Error(`Invalid node IP ${JSON.stringify(ip)}: expected an IPv4 or IPv6 address`);
      }
      return c;
    });
    this.#primaryNodeIP = options.primaryNodeIP === undefined
      ? undefined
      : canonicalIP(options.primaryNodeIP) ?? undefined;
    this.#topology = options.topology ?? {};
    this.#slices = new EndpointSliceCache(options.nodeName);
  }

  handleEvent(event: ObjectEvent): boolean {
    if (event.kind === "Service") this.#handleService(event);
    else if (event.kind === "EndpointSlice") this.#handleSlice(event);
    else if (event.kind === "Node") {
      const before = this.#nodeStatus;
      this.#handleNode(event);
      return !deepEqual(before, this.#nodeStatus);
    } else if (event.kind === "ServiceCIDR") {
      this.#handleServiceCIDR(event);
      return true;
    }
    return this.#anyPending();
  }

  markSynced(kind: ObjectKind): void {
    this.#synced.add(kind);
  }

  isSynced(): boolean {
    return this.#synced.has("Service") && this.#synced.has("EndpointSlice");
  }

  snapshot(family: IPFamily): ProxyState {
    const st = this.#family(family);
    const previous = st.previous;
    const node = nodeInfoForFamily(
      this.#nodeName,
      this.#nodeStatus,
      family,
      this.#fallbackNodeIPs,
      this.#primaryNodeIP,
    );
    const labelsChanged = previous !== undefined && !deepEqual(previous.node.labels, node.labels);
    const nodeChanged = previous !== undefined && !deepEqual(previous.node, node);
    const dirty = this.#dirtyServices(family, previous === undefined || labelsChanged);

    const prevServices: ReadonlyMap<string, ServicePortState> = previous?.services ?? new Map();
    const out = new Map(prevServices);
    const changed = new Set<string>();
    for (const serviceKey of dirty) {
      this.#recomputeService(family, serviceKey, node.labels, prevServices, out, changed);
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
      serviceCIDRs: this.#serviceCIDRs.cidrsFor(family),
    };
    st.previous = state;
    this.#counted = undefined;
    st.services.clear();
    st.slices.clear();
    // A family never snapshotted stops queueing once another is active: its first snapshot
    // recomputes everything anyway, and its queue would keep pending() from reaching zero.
    for (const other of this.#families.values()) {
      if (other.previous === undefined) {
        other.services.clear();
        other.slices.clear();
      }
    }
    return state;
  }

  pending(): { services: number; endpoints: number } {
    const serviceKeys = new Set<string>();
    const endpointKeys = new Set<string>();
    for (const [, st] of this.#countedFamilies()) {
      for (const key of st.services.keys()) serviceKeys.add(key);
      for (const [sliceKey, baseline] of st.slices.entries()) {
        if (baseline) endpointKeys.add(baseline.serviceKey);
        const current = this.#slices.get(sliceKey);
        if (current) endpointKeys.add(current.serviceKey);
      }
    }
    return { services: serviceKeys.size, endpoints: endpointKeys.size };
  }

  node(): NodeStatus | undefined {
    return this.#nodeStatus;
  }

  takeChangeTriggerTimes(): number[] {
    const out = this.#triggerTimes;
    this.#triggerTimes = [];
    return out;
  }

  #family(f: IPFamily): FamilyState {
    return this.#families.get(f)!;
  }

  /**
   * Families whose pending changes matter: the snapshotted ones, or all before any snapshot.
   * Asked on every event, so kept until a snapshot changes it.
   */
  #countedFamilies(): readonly [IPFamily, FamilyState][] {
    if (this.#counted !== undefined) return this.#counted;
    const all = [...this.#families];
    const active = all.filter(([, st]) => st.previous !== undefined);
    return this.#counted = active.length > 0 ? active : all;
  }

  /** Whether any counted family has a Service or slice change pending. */
  #anyPending(): boolean {
    return this.#countedFamilies().some(([, st]) => st.services.size > 0 || st.slices.size > 0);
  }

  #setService(key: string, after: ValidatedService | undefined): void {
    const before = this.#services.get(key);
    if (after) this.#services.set(key, after);
    else this.#services.delete(key);
    for (const [f, st] of this.#countedFamilies()) {
      st.services.record(key, before?.ports[f], after?.ports[f]);
    }
  }

  #setSlice(key: string, after: ValidatedEndpointSlice | undefined, triggerTime?: number): void {
    const before = after ? this.#slices.set(after) : this.#slices.delete(key);
    if (
      after && triggerTime !== undefined && triggerTime > this.#startTimeMs &&
      !deepEqual(before, after)
    ) {
      this.#triggerTimes.push(triggerTime);
    }
    for (const [f, st] of this.#countedFamilies()) {
      const of = (s: ValidatedEndpointSlice | undefined) => s?.addressType === f ? s : undefined;
      st.slices.record(key, of(before), of(after));
    }
  }

  #handleService(event: Extract<ObjectEvent, { kind: "Service" }>): void {
    const key = rawObjectKey(event.object?.metadata);
    if (event.type === "DELETED" || !selectedByProxyLabels(event.object?.metadata?.labels)) {
      this.#setService(key, undefined);
      return;
    }
    const res = validateService(event.object);
    if (!res.ok) this.#onInvalid("Service", key, res.reason);
    else this.#setService(res.value.key, res.value);
  }

  #handleSlice(event: Extract<ObjectEvent, { kind: "EndpointSlice" }>): void {
    const key = rawObjectKey(event.object?.metadata);
    if (event.type === "DELETED" || !selectedByProxyLabels(event.object?.metadata?.labels)) {
      this.#setSlice(key, undefined);
      return;
    }
    const res = validateEndpointSlice(event.object);
    if (!res.ok) this.#onInvalid("EndpointSlice", key, res.reason);
    else this.#setSlice(res.value.key, res.value, lastChangeTriggerTime(event.object));
  }

  #handleNode(event: Extract<ObjectEvent, { kind: "Node" }>): void {
    if (event.object?.metadata?.name !== this.#nodeName) return;
    if (event.type === "DELETED") {
      this.#nodeStatus = undefined;
      return;
    }
    const res = validateNode(event.object);
    if (!res.ok) this.#onInvalid("Node", this.#nodeName, res.reason);
    else this.#nodeStatus = res.value;
  }

  #handleServiceCIDR(event: Extract<ObjectEvent, { kind: "ServiceCIDR" }>): void {
    const name = event.object?.metadata?.name;
    if (event.type === "DELETED") {
      if (typeof name === "string") this.#serviceCIDRs.delete(name);
      return;
    }
    const res = validateServiceCIDR(event.object);
    if (!res.ok) {
      this.#onInvalid("ServiceCIDR", typeof name === "string" ? name : "", res.reason);
      return;
    }
    const { value, skipped } = res.value;
    for (const reason of skipped) this.#onInvalid("ServiceCIDR", value.name, reason);
    this.#serviceCIDRs.set(value);
  }

  /**
   * The Services a snapshot recomputes: all of them when `full` (the first snapshot, or the
   * node's labels changed), else those touched by a pending Service or slice change.
   */
  #dirtyServices(family: IPFamily, full: boolean): Set<string> {
    const st = this.#family(family);
    const dirty = new Set<string>();
    if (full) {
      for (const key of this.#services.keys()) dirty.add(key);
      for (const key of st.portKeysByService.keys()) dirty.add(key);
    } else {
      for (const key of st.services.keys()) dirty.add(key);
      for (const [sliceKey, baseline] of st.slices.entries()) {
        if (baseline) dirty.add(baseline.serviceKey);
        const current = this.#slices.get(sliceKey);
        if (current?.addressType === family) dirty.add(current.serviceKey);
      }
    }
    return dirty;
  }

  /** Recomputes one Service's ports into `out`, reusing unchanged states from `prev`. */
  #recomputeService(
    family: IPFamily,
    serviceKey: string,
    labels: Readonly<Record<string, string>>,
    prev: ReadonlyMap<string, ServicePortState>,
    out: Map<string, ServicePortState>,
    changed: Set<string>,
  ): void {
    const st = this.#family(family);
    const oldKeys = st.portKeysByService.get(serviceKey) ?? [];
    const ports = this.#services.get(serviceKey)?.ports[family] ?? [];
    const newKeys: string[] = [];
    if (ports.length > 0) {
      const endpoints = this.#slices.endpointsFor(serviceKey, family);
      for (const info of ports) {
        const key = servicePortKey(info.name);
        const allEndpoints = endpoints.get(key) ?? [];
        const fresh: ServicePortState = {
          info,
          allEndpoints,
          ...categorizeEndpoints(allEndpoints, info, this.#nodeName, labels, this.#topology),
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
  }
}
