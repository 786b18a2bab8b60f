/**
 * The addresses on kube-ipvs0: desired vs bound → `ip -batch -` input (one process for all),
 * each address as /32 or /128. Additions go before the iptables rules, removals after them,
 * as upstream binds during the virtual-server sync and unbinds at the end.
 */
import { ipFamily } from "../../net/mod.ts";
import type { IPFamily } from "../../proxy/mod.ts";
import { KUBE_IPVS_DEVICE } from "./cleanup.ts";

/** Addresses to add to and remove from kube-ipvs0. */
export interface AddressDiff {
  readonly add: readonly string[];
  readonly del: readonly string[];
}

/** Compares wanted and bound addresses; bound ones of the other family are left alone. */
export function diffBoundAddresses(
  desired: ReadonlySet<string>,
  bound: readonly string[],
  family: IPFamily,
): AddressDiff {
  const have = new Set(bound);
  return {
    add: [...desired].filter((ip) => !have.has(ip)),
    del: bound.filter((ip) => ipFamily(ip) === family && !desired.has(ip)),
  };
}

function prefixed(ip: string): string {
  return ip.includes(":") ? `${ip}/128` : `${ip}/32`;
}

/** `ip -batch -` lines adding addresses to kube-ipvs0 ("" when none). */
export function addressAddBatch(ips: readonly string[]): string {
  return ips.map((ip) => `addr add ${prefixed(ip)} dev ${KUBE_IPVS_DEVICE}\n`).join("");
}

/** `ip -batch -` lines removing addresses from kube-ipvs0 ("" when none). */
export function addressDelBatch(ips: readonly string[]): string {
  return ips.map((ip) => `addr del ${prefixed(ip)} dev ${KUBE_IPVS_DEVICE}\n`).join("");
}
