/**
 * What `render --proxy-mode ipvs` prints: everything a first sync applies on an empty node,
 * for one family: the ipset restore input, the ipvsadm restore input, the kube-ipvs0
 * addresses and the iptables-restore input. Pure.
 */
import type { ProxyState } from "../../proxy/mod.ts";
import { addressAddBatch } from "./_address_diff.ts";
import { computeIpvsDesiredState } from "./_desired_state.ts";
import { GracefulTerminationList } from "./_graceful_termination.ts";
import { diffIpvs, ipvsadmRestoreInput } from "./_ipvs_diff.ts";
import { buildIpsetRestore } from "./_ipset_diff.ts";
import type { IpvsOptions } from "./ipvs_options.ts";
import { buildIpvsRestoreInput, renderIpvsIptablesRules } from "./render_iptables.ts";

/** The four payloads of a first sync on an empty node. */
export interface IpvsRenderedPayloads {
  readonly ipsetRestore: string;
  readonly ipvsadmRestore: string;
  /** `ip -batch -` input binding the addresses to kube-ipvs0. */
  readonly addressBatch: string;
  readonly iptablesRestore: string;
}

/** Computes the payloads a first sync applies on an empty node. */
export function renderIpvsPayloads(
  state: ProxyState,
  options: IpvsOptions = {},
): IpvsRenderedPayloads {
  const desired = computeIpvsDesiredState(state, options);
  const diff = diffIpvs(desired.virtualServers, new Map(), {
    family: state.family,
    excludeCIDRs: desired.config.excludeCIDRs,
    draining: new GracefulTerminationList(),
  });
  return {
    ipsetRestore: buildIpsetRestore(desired.ipsets, new Map(), state.family),
    ipvsadmRestore: ipvsadmRestoreInput(diff.lines),
    addressBatch: addressAddBatch([...desired.boundAddresses]),
    iptablesRestore: buildIpvsRestoreInput(renderIpvsIptablesRules(desired)),
  };
}

/** The `render` text of one family: the four payloads under `#` headings. */
export function renderIpvsText(state: ProxyState, options: IpvsOptions = {}): string {
  const p = renderIpvsPayloads(state, options);
  const fam = state.family;
  return [
    `# ${fam}: ipset restore\n${p.ipsetRestore}`,
    `# ${fam}: ipvsadm -R\n${p.ipvsadmRestore}`,
    `# ${fam}: ip -batch - (kube-ipvs0 addresses)\n${p.addressBatch}`,
    `# ${fam}: iptables-restore --noflush\n${p.iptablesRestore}`,
  ].join("");
}
