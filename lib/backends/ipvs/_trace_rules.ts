/**
 * What an IPVS-mode trace reads: the virtual servers (`ipvsadm -Sn`), the ipsets
 * (`ipset save`), the nat and filter rules (`iptables-save`) and the kube-ipvs0 addresses,
 * either from the kernel with read-only commands or as lib/backends/ipvs renders them for a
 * state on an empty node. The kernel keeps no service names, so those come from the cluster
 * state when one is at hand.
 */
import type { ProxyConfig } from "../../config/mod.ts";
import { computeIpvsDesiredState } from "./_desired_state.ts";
import { ipvsModeOptions } from "./ipvs_options.ts";
import { renderIpvsPayloads } from "./_render.ts";
import { virtualServerKey } from "./virtual_server.ts";
import { detectIptablesFlavour, iptablesBinaries } from "../../netfilter/mod.ts";
import { type CommandRunner, runChecked } from "../../exec/mod.ts";
import { canonicalIP, ipFamily } from "../../net/mod.ts";
import {
  type IPFamily,
  type Protocol,
  type ProxyState,
  servicePortNameString,
} from "../../proxy/mod.ts";

/** One family's IPVS-mode objects, as text the tools print (or the renderer writes). */
export interface IpvsRules {
  readonly family: IPFamily;
  /** `ipvsadm -Sn` output (or `ipvsadm -R` input). */
  readonly ipvsadm: string;
  /** `ipset save` output (or `ipset restore` input). */
  readonly ipsets: string;
  /** `iptables-save` output of nat and filter (or `iptables-restore` input). */
  readonly iptables: string;
  /** Addresses on kube-ipvs0. */
  readonly addresses: readonly string[];
  /** Virtual server key (`ip:port/PROTO`) → `ns/name:port`; empty when read from a kernel. */
  readonly serviceNames: ReadonlyMap<string, string>;
}

/** The virtual server keys of every service port of `state` → its name. */
export function ipvsServiceNames(
  config: ProxyConfig,
  state: ProxyState,
): Map<string, string> {
  const desired = computeIpvsDesiredState(state, ipvsModeOptions(config, state.family));
  const skipped = new Set(desired.skipped.map((s) => s.key));
  const names = new Map<string, string>();
  for (const [key, sps] of state.services) {
    if (skipped.has(key)) continue;
    const info = sps.info;
    const name = servicePortNameString(info.name);
    const protocol: Protocol = info.protocol;
    const add = (ip: string, port: number) => {
      const address = canonicalIP(ip);
      if (address === null || ipFamily(address) !== state.family) return;
      const k = virtualServerKey({ address, port, protocol });
      if (!names.has(k)) names.set(k, name);
    };
    add(info.clusterIP, info.port);
    for (const ip of [...info.externalIPs, ...info.loadBalancerIPs]) add(ip, info.port);
    if (info.nodePort !== 0) {
      for (const ip of desired.config.nodePortIPs) add(ip, info.nodePort);
    }
  }
  return names;
}

/** The objects IPVS mode renders for `state` on an empty node. */
export function renderedIpvsRules(config: ProxyConfig, state: ProxyState): IpvsRules {
  const p = renderIpvsPayloads(state, ipvsModeOptions(config, state.family));
  const addresses = [...p.addressBatch.matchAll(/^addr add (\S+)\/\d+ dev kube-ipvs0$/gm)]
    .map((m) => m[1]!);
  return {
    family: state.family,
    ipvsadm: p.ipvsadmRestore,
    ipsets: p.ipsetRestore,
    iptables: p.iptablesRestore,
    addresses,
    serviceNames: ipvsServiceNames(config, state),
  };
}

/** `ip -o addr show dev kube-ipvs0` → the addresses of `family`. */
export function parseLinkAddresses(text: string, family: IPFamily): string[] {
  const word = family === "IPv4" ? "inet" : "inet6";
  const out: string[] = [];
  for (const m of text.matchAll(/\s(inet6?) ([0-9a-fA-F:.]+)\/\d+/g)) {
    if (m[1] === word) out.push(canonicalIP(m[2]!) ?? m[2]!);
  }
  return out;
}

/**
 * Reads the family's objects with read-only commands: `ipvsadm -Sn`, `ipset save`,
 * `iptables-save` of the flavour the node uses, `ip -o addr show dev kube-ipvs0`.
 */
export async function readIpvsRules(runner: CommandRunner, family: IPFamily): Promise<IpvsRules> {
  const ipvsadm = await runChecked(runner, { cmd: "ipvsadm", args: ["-Sn"] });
  const ipsets = await runChecked(runner, { cmd: "ipset", args: ["save"] });
  const save = iptablesBinaries(family, await detectIptablesFlavour(runner)).save;
  const nat = await runChecked(runner, { cmd: save, args: ["-t", "nat"] });
  const filter = await runChecked(runner, { cmd: save, args: ["-t", "filter"] });
  const link = await runner({ cmd: "ip", args: ["-o", "addr", "show", "dev", "kube-ipvs0"] });
  return {
    family,
    ipvsadm,
    ipsets,
    iptables: `${nat}\n${filter}`,
    // No kube-ipvs0 (nothing programmed yet) means no bound addresses.
    addresses: link.code === 0 ? parseLinkAddresses(link.stdout, family) : [],
    serviceNames: new Map(),
  };
}
