/**
 * Renders a ProxyState into the desired `kube-proxy` table of its family, as owners in an
 * NftTableStore: the fixed base, and one owner per service port. `renderNftables` is the pure
 * whole-table render; `updateNftTableStore` re-renders only the service ports a snapshot marks
 * changed, which is what a partial sync writes.
 *
 * Layout: every ClusterIP, external and LB address is an element of the `service-ips` verdict
 * map (NodePorts: `service-nodeports`) that leads to a chain shared by every service with the
 * same endpoint count, which DNATs through one shared map keyed
 * `daddr . proto . port . numgen random mod N`. Chains and maps do not grow with the number of
 * services (session-affinity services excepted). bench/nftables_layout.ts measures it with raw
 * `nft -f` (docs/performance.md).
 */
import { type SkippedServicePort, untrustedValue } from "../../proxy/mod.ts";
import { type ProxyState, servicePortNameString } from "../../proxy/mod.ts";
import { NFT_TABLE, NFT_TABLE_COMMENT } from "./_names.ts";
import { renderBase } from "./_render_base.ts";
import {
  type NftablesRenderOptions,
  type NftRenderConfig,
  resolveNftRenderConfig,
} from "./render_options.ts";
import { type NftServicePortObjects, renderNftServicePort } from "./_render_service.ts";
import { ObjectCollector } from "./_table_objects.ts";
import type { NftTableModel } from "./table_model.ts";
import { NftTableStore } from "./_table_store.ts";

/** The owner name of the fixed base objects (service port keys are never empty). */
export const BASE_OWNER = "";

/** What one store update reports. */
export interface NftRenderReport {
  /** Service ports left out because a value could not be trusted. */
  readonly skipped: readonly SkippedServicePort[];
  /** Entry points left out because another service port already holds the same key. */
  readonly conflicts: readonly SkippedServicePort[];
  /** Service ports whose internal (ITP Local) traffic has no local endpoint. */
  readonly noLocalEndpointsInternal: number;
  /** Service ports whose external (ETP Local) traffic has no local endpoint. */
  readonly noLocalEndpointsExternal: number;
}

/** The whole-table render of a state. */
export interface NftRenderResult extends NftRenderReport {
  readonly model: NftTableModel;
  readonly config: NftRenderConfig;
}

/** An empty store for the family of `config`. */
export function newNftTableStore(config: NftRenderConfig): NftTableStore {
  return new NftTableStore(config.nftFamily, NFT_TABLE, NFT_TABLE_COMMENT);
}

/**
 * Brings `store` to `state`: every service port when `full`, else only the keys in
 * `state.changed`. The base is always re-rendered (it is small; unchanged it costs nothing).
 */
export function updateNftTableStore(
  store: NftTableStore,
  state: ProxyState,
  config: NftRenderConfig,
  full: boolean,
): NftRenderReport {
  const base = new ObjectCollector();
  renderBase(base, config);
  store.replace(BASE_OWNER, base.objects());
  const skipped: SkippedServicePort[] = [];
  const conflicts: SkippedServicePort[] = [];
  let keys: string[];
  if (full) {
    for (const owner of [...store.owners()]) {
      if (owner !== BASE_OWNER && !state.services.has(owner)) store.replace(owner, undefined);
    }
    keys = [...state.services.keys()].sort();
  } else {
    keys = [...state.changed].sort();
  }
  for (const key of keys) {
    const sps = state.services.get(key);
    if (sps === undefined) {
      store.replace(key, undefined);
      continue;
    }
    const reason = untrustedValue(sps, state.family);
    if (reason !== null) {
      store.replace(key, undefined);
      skipped.push({ key, reason });
      continue;
    }
    for (const c of store.replace(key, renderNftServicePort(config, sps))) {
      conflicts.push({
        key,
        reason: `${servicePortNameString(sps.info.name)}: ${c.what} already in use`,
      });
    }
  }
  let noLocalInternal = 0;
  let noLocalExternal = 0;
  for (const owner of store.owners()) {
    const o = store.ownerObjects(owner) as Partial<NftServicePortObjects> | undefined;
    if (o?.noLocalEndpointsInternal) noLocalInternal++;
    if (o?.noLocalEndpointsExternal) noLocalExternal++;
  }
  return {
    skipped,
    conflicts,
    noLocalEndpointsInternal: noLocalInternal,
    noLocalEndpointsExternal: noLocalExternal,
  };
}

/** Renders the whole desired table for `state`. Pure. */
export function renderNftables(
  state: ProxyState,
  options: NftablesRenderOptions = {},
): NftRenderResult {
  const config = resolveNftRenderConfig(state, options);
  const store = newNftTableStore(config);
  store.suspendTracking();
  const report = updateNftTableStore(store, state, config, true);
  // The store is dropped here, so its live view is as good as a copy.
  return { ...report, model: store.view(), config };
}
