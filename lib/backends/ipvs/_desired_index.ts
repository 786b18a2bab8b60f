/**
 * The desired IPVS state kept between syncs as one share per service port, so a sync driven by
 * a few changed ports recomputes only their shares and learns what that changes: the virtual
 * servers they touch, set members and kube-ipvs0 addresses that appear or disappear (counted,
 * since ports may share an address), and whether the iptables rules' inputs moved.
 */
import { type SkippedServicePort, untrustedValue } from "../../proxy/mod.ts";
import type { ProxyState } from "../../proxy/mod.ts";
import {
  computePortShare,
  type IpvsDesiredState,
  type LbNoNodeAccess,
  mergePortShares,
  type PortShare,
} from "./_desired_state.ts";
import { IPSET, IPSET_SPECS } from "./_ipset_specs.ts";
import type { ResolvedIpvsConfig } from "./ipvs_options.ts";
import type { IpvsRuleInputs } from "./render_iptables.ts";
import type { VirtualServerState } from "./virtual_server.ts";

/** What replacing some ports' shares changed. */
export interface IpvsDelta {
  /**
   * True when the change cannot be applied piecewise (a virtual server claimed by two ports):
   * the caller must sync in full.
   */
  readonly needsFull: boolean;
  /** Every virtual server key the changed ports had or have. */
  readonly touched: ReadonlySet<string>;
  /** The wanted state of the touched virtual servers that are still wanted. */
  readonly virtualServers: ReadonlyMap<string, VirtualServerState>;
  /** `[IPv4 set name, member]` pairs that appeared and disappeared. */
  readonly addMembers: readonly (readonly [string, string])[];
  readonly delMembers: readonly (readonly [string, string])[];
  /** kube-ipvs0 addresses that appeared and disappeared. */
  readonly bind: readonly string[];
  readonly unbind: readonly string[];
  /** Ports of `keys` skipped for an untrusted value. */
  readonly skipped: readonly SkippedServicePort[];
}

/** Counts references to keys; reports which keys a batch of changes made appear or vanish. */
class RefCounts<K> {
  readonly counts = new Map<K, number>();
  /** Count before the current batch, for keys the batch touched. */
  #before = new Map<K, number>();

  add(key: K, n: number): void {
    const now = this.counts.get(key) ?? 0;
    if (!this.#before.has(key)) this.#before.set(key, now);
    if (now + n === 0) this.counts.delete(key);
    else this.counts.set(key, now + n);
  }

  /** Ends the batch: keys that went from absent to present, and from present to absent. */
  flush(): { appeared: K[]; vanished: K[] } {
    const appeared: K[] = [], vanished: K[] = [];
    for (const [key, was] of this.#before) {
      const is = this.counts.get(key) ?? 0;
      if (was === 0 && is > 0) appeared.push(key);
      if (was > 0 && is === 0) vanished.push(key);
    }
    this.#before = new Map();
    return { appeared, vanished };
  }
}

/** Members are counted under one key per set and member. */
const SEP = "\u0000";

/** The shares of every service port of one family, and the counts derived from them. */
export class IpvsDesiredIndex {
  readonly #shares = new Map<string, PortShare>();
  readonly #skipped = new Map<string, SkippedServicePort>();
  readonly #members = new RefCounts<string>();
  /** Members per set, for the rules (a set's emptiness changes them). */
  readonly #setSizes = new Map<string, number>(IPSET_SPECS.map((s) => [s.base, 0]));
  readonly #bound = new RefCounts<string>();
  readonly #vsClaims = new RefCounts<string>();
  /** The port whose share holds each virtual server (one per server unless claims > 1). */
  readonly #vsOwner = new Map<string, string>();
  #ownerLost = false;
  readonly #lbNoNodeAccess = new Map<string, readonly LbNoNodeAccess[]>();

  constructor(readonly config: ResolvedIpvsConfig) {}

  /** Builds the index of a whole state (a full sync). */
  static of(state: ProxyState, config: ResolvedIpvsConfig): IpvsDesiredIndex {
    const index = new IpvsDesiredIndex(config);
    index.update(state, state.services.keys());
    return index;
  }

  /** How many service ports are indexed (trusted or skipped). */
  get size(): number {
    return this.#shares.size + this.#skipped.size;
  }

  /**
   * Recomputes the shares of `keys` from `state` (a key `state` lacks is removed), plus any
   * port whose presence differs between the index and `state`; returns what that changed.
   */
  update(state: ProxyState, keys: Iterable<string>): IpvsDelta {
    const touched = new Set<string>();
    const skipped: SkippedServicePort[] = [];
    this.#ownerLost = false;
    const redo = (key: string) => {
      const old = this.#shares.get(key);
      if (old !== undefined) this.#count(key, old, -1, touched);
      this.#shares.delete(key);
      this.#skipped.delete(key);
      const sps = state.services.get(key);
      if (sps === undefined) return;
      const reason = untrustedValue(sps, state.family);
      if (reason !== null) {
        this.#skipped.set(key, { key, reason });
        skipped.push({ key, reason });
        return;
      }
      const share = computePortShare(sps, this.config);
      this.#shares.set(key, share);
      this.#count(key, share, 1, touched);
    };
    for (const key of keys) redo(key);
    if (this.size !== state.services.size) {
      // `changed` missed an added or removed port: find them the slow way.
      for (const key of [...this.#shares.keys(), ...this.#skipped.keys()]) {
        if (!state.services.has(key)) redo(key);
      }
      for (const key of state.services.keys()) {
        if (!this.#shares.has(key) && !this.#skipped.has(key)) redo(key);
      }
    }
    let needsFull = this.#ownerLost;
    for (const key of touched) if ((this.#vsClaims.counts.get(key) ?? 0) > 1) needsFull = true;
    this.#vsClaims.flush();

    const members = this.#members.flush();
    const bound = this.#bound.flush();
    const split = (k: string) => k.split(SEP) as [string, string];
    const addMembers = members.appeared.map(split);
    const delMembers = members.vanished.map(split);
    for (const ip of bound.appeared) addMembers.push([IPSET.ipvsIPs, ip]);
    for (const ip of bound.vanished) delMembers.push([IPSET.ipvsIPs, ip]);
    for (const [set] of addMembers) this.#setSizes.set(set, this.#setSizes.get(set)! + 1);
    for (const [set] of delMembers) this.#setSizes.set(set, this.#setSizes.get(set)! - 1);

    const virtualServers = new Map<string, VirtualServerState>();
    for (const key of touched) {
      const want = this.#wanted(key);
      if (want !== undefined) virtualServers.set(key, want);
    }
    return {
      needsFull,
      touched,
      virtualServers,
      addMembers,
      delMembers,
      bind: bound.appeared,
      unbind: bound.vanished,
      skipped,
    };
  }

  /** The wanted state of a touched virtual server: from the share that last claimed it. */
  #wanted(vsKey: string): VirtualServerState | undefined {
    if (!this.#vsClaims.counts.has(vsKey)) return undefined;
    const owner = this.#vsOwner.get(vsKey);
    return owner === undefined ? undefined : this.#shares.get(owner)?.virtualServers.get(vsKey);
  }

  #count(key: string, share: PortShare, n: 1 | -1, touched: Set<string>): void {
    for (const vsKey of share.virtualServers.keys()) {
      this.#vsClaims.add(vsKey, n);
      touched.add(vsKey);
      if (n === 1) {
        this.#vsOwner.set(vsKey, key);
      } else if (this.#vsOwner.get(vsKey) === key) {
        this.#vsOwner.delete(vsKey);
        // Another port still claims it: only a full sync knows which one wins.
        if (this.#vsClaims.counts.has(vsKey)) this.#ownerLost = true;
      }
    }
    for (const [set, entry] of share.members) this.#members.add(set + SEP + entry, n);
    for (const ip of share.bound) this.#bound.add(ip, n);
    if (share.lbNoNodeAccess.length === 0) return;
    if (n === 1) this.#lbNoNodeAccess.set(key, share.lbNoNodeAccess);
    else this.#lbNoNodeAccess.delete(key);
  }

  /** What the iptables rules depend on: the config, which sets are empty, LB addresses. */
  ruleInputs(): IpvsRuleInputs {
    const lbNoNodeAccess = [...this.#lbNoNodeAccess.keys()].sort()
      .flatMap((key) => this.#lbNoNodeAccess.get(key)!);
    const ipsets = new Map<string, { size: number }>();
    for (const [set, size] of this.#setSizes) ipsets.set(set, { size });
    return { family: this.config.family, config: this.config, lbNoNodeAccess, ipsets };
  }

  /** The whole desired state, merged in key order (what a one-pass compute gives). */
  desiredState(): IpvsDesiredState {
    const keys = [...this.#shares.keys()].sort();
    return mergePortShares(this.config, keys.map((k) => this.#shares.get(k)!), [
      ...this.#skipped.values(),
    ]);
  }
}
