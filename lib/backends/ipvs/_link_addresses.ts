/**
 * Reads `ip -j addr show` once per sync: whether kube-ipvs0 exists, the addresses bound to it,
 * and the node's addresses on every other interface (upstream's GetLocalAddresses and
 * GetAllLocalAddressesExcept, from one listing).
 */
import { canonicalIP, ipFamily } from "../../net/mod.ts";
import type { IPFamily } from "../../proxy/mod.ts";
import { KUBE_IPVS_DEVICE } from "./cleanup.ts";

/** What one listing says about kube-ipvs0 and the rest of the node. */
export interface LinkAddresses {
  readonly deviceExists: boolean;
  /** Addresses of the family on kube-ipvs0. */
  readonly bound: readonly string[];
  /** Addresses of the family on every other interface. */
  readonly node: readonly string[];
}

/** Parses `ip -j addr show` output for one family. Throws SyntaxError when it is not a list. */
export function parseLinkAddresses(json: string, family: IPFamily): LinkAddresses {
  const links: unknown = JSON.parse(json === "" ? "[]" : json);
  if (!Array.isArray(links)) {
    throw new SyntaxError(`Invalid "ip -j addr show" output: expected a JSON array`);
  }
  let deviceExists = false;
  // Sets keep first-seen order and make the check for duplicates O(1): kube-ipvs0 holds one
  // address per service IP, tens of thousands on a large cluster.
  const bound = new Set<string>();
  const node = new Set<string>();
  for (const link of links) {
    const name = (link as { ifname?: unknown })?.ifname;
    const infos = (link as { addr_info?: unknown })?.addr_info;
    const isDevice = name === KUBE_IPVS_DEVICE;
    if (isDevice) deviceExists = true;
    if (!Array.isArray(infos)) continue;
    for (const info of infos) {
      const local = (info as { local?: unknown })?.local;
      const ip = typeof local === "string" ? canonicalIP(local) : null;
      // IPv6 link-local addresses are never service or node addresses (upstream skips them).
      if (ip === null || ipFamily(ip) !== family || /^fe[89ab][0-9a-f]:/.test(ip)) continue;
      (isDevice ? bound : node).add(ip);
    }
  }
  return { deviceExists, bound: [...bound], node: [...node] };
}
