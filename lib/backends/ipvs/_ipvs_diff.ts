/**
 * Desired virtual servers vs what the kernel holds → `ipvsadm -R` lines, with upstream's
 * rules: a changed VS is edited (`-E`), a missing real server added with weight 1, a removed
 * one drained or deleted (graceful termination), a returning draining one deleted and re-added
 * (MoveRSOutofGracefulDeleteList), and a VS nobody wants deleted unless it lies in
 * --ipvs-exclude-cidrs or is of the other family (cleanLegacyService).
 */
import { linesText } from "../common/mod.ts";
import { type CIDR, cidrContains, ipFamily } from "../../net/mod.ts";
import type { IPFamily } from "../../proxy/mod.ts";
import {
  type DrainingRealServer,
  type GracefulTerminationList,
  hasConnections,
  needsGracefulTermination,
} from "./_graceful_termination.ts";
import {
  deleteRealServerLine,
  deleteVirtualServerLine,
  type IpvsTable,
  realServerLine,
  virtualServerChanged,
  virtualServerLine,
} from "./virtual_server.ts";

/** What the diff needs besides the two tables. */
export interface IpvsDiffOptions {
  readonly family: IPFamily;
  readonly excludeCIDRs: readonly CIDR[];
  /** Read only: list changes are returned, to be made once the lines are applied. */
  readonly draining: GracefulTerminationList;
}

/** The `ipvsadm -R` lines and the list changes they imply. */
export interface IpvsDiff {
  readonly lines: readonly string[];
  /** Real servers set to (or found at) weight 0 that must be listed. */
  readonly drain: readonly DrainingRealServer[];
  /** `[vsKey, rsKey]` pairs to take off the list (wanted again, or their VS deleted). */
  readonly undrain: readonly (readonly [string, string])[];
  /** Keys of the virtual servers deleted. */
  readonly deletedVirtualServers: readonly string[];
}

/** Whether cleanLegacyService may delete a VS on this address. */
export function mayDeleteVirtualServer(
  address: string,
  family: IPFamily,
  excludeCIDRs: readonly CIDR[],
): boolean {
  if (ipFamily(address) !== family) return false;
  return !excludeCIDRs.some((c) => cidrContains(c, address));
}

/** Computes the lines that turn `current` into `desired`. Pure. */
export function diffIpvs(
  desired: IpvsTable,
  current: IpvsTable,
  options: IpvsDiffOptions,
): IpvsDiff {
  const lines: string[] = [];
  const drain: DrainingRealServer[] = [];
  const undrain: [string, string][] = [];
  const deleted: string[] = [];
  const { draining } = options;
  // Usually nothing drains: then skip building a list key per real server.
  const anyDraining = draining.size > 0;
  const isDraining = (vsKey: string, rsKey: string) => anyDraining && draining.has(vsKey, rsKey);

  for (const [vsKey, want] of desired) {
    const vs = want.vs;
    const have = current.get(vsKey);
    if (have === undefined) {
      lines.push(virtualServerLine("-A", vs));
      for (const [rsKey, rs] of want.realServers) {
        lines.push(realServerLine("-a", vs, rs));
        if (isDraining(vsKey, rsKey)) undrain.push([vsKey, rsKey]);
      }
      continue;
    }
    if (virtualServerChanged(have.vs, vs)) lines.push(virtualServerLine("-E", vs));
    for (const [rsKey, rs] of want.realServers) {
      const cur = have.realServers.get(rsKey);
      const listed = isDraining(vsKey, rsKey);
      if (listed) undrain.push([vsKey, rsKey]);
      if (cur === undefined) {
        lines.push(realServerLine("-a", vs, rs));
      } else if (listed) {
        lines.push(deleteRealServerLine(vs, cur), realServerLine("-a", vs, rs));
      } else if (cur.weight !== rs.weight) {
        lines.push(realServerLine("-e", vs, rs));
      }
    }
    for (const [rsKey, cur] of have.realServers) {
      if (want.realServers.has(rsKey) || isDraining(vsKey, rsKey)) continue;
      if (!needsGracefulTermination(vs.protocol) || !hasConnections(cur)) {
        lines.push(deleteRealServerLine(vs, cur));
        continue;
      }
      if (cur.weight !== 0) lines.push(realServerLine("-e", vs, { ...cur, weight: 0 }));
      drain.push({ vs, rs: { address: cur.address, port: cur.port } });
    }
  }

  for (const [vsKey, have] of current) {
    if (desired.has(vsKey)) continue;
    if (!mayDeleteVirtualServer(have.vs.address, options.family, options.excludeCIDRs)) continue;
    lines.push(deleteVirtualServerLine(have.vs));
    deleted.push(vsKey);
  }
  return { lines, drain, undrain, deletedVirtualServers: deleted };
}

/** Makes the list changes of an applied diff. */
export function commitIpvsDiff(diff: IpvsDiff, draining: GracefulTerminationList): void {
  for (const [vsKey, rsKey] of diff.undrain) draining.delete(vsKey, rsKey);
  for (const vsKey of diff.deletedVirtualServers) draining.deleteVirtualServer(vsKey);
  for (const entry of diff.drain) draining.add(entry);
}

/** `ipvsadm -R` input from lines ("" when there is nothing to do). */
export function ipvsadmRestoreInput(lines: readonly string[]): string {
  return linesText([...lines]);
}
