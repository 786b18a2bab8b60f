/**
 * The knobs of IPVS mode and their resolution against one family: scheduler, masquerade mark,
 * local-traffic detection, the node addresses NodePorts are served on, excluded CIDRs. Pure.
 */
import {
  canonicalIP,
  type CIDR,
  ipFamily,
  isLoopbackIP,
  parseCIDR,
  resolveNodePortAddresses,
  selectNodePortIPs,
} from "../../net/mod.ts";
import type { IPFamily, ProxyState } from "../../proxy/mod.ts";
import { masqueradeMarkText } from "../common/mod.ts";
import { type LocalDetectOptions, localDetectorFor } from "../../netfilter/mod.ts";
import { commonRenderOptions, type ProxyConfig } from "../../config/mod.ts";

/** What IPVS mode needs besides the ProxyState; every field has upstream's default. */
export interface IpvsOptions extends LocalDetectOptions {
  /** --ipvs-scheduler; "" or absent means rr. */
  readonly scheduler?: string;
  /** Bit of the packet mark that flags traffic for masquerade (default 14). */
  readonly masqueradeBit?: number;
  /** --masquerade-all. */
  readonly masqueradeAll?: boolean;
  /** --nodeport-addresses: CIDRs or "primary"; empty means every node address. */
  readonly nodePortAddresses?: readonly string[];
  /**
   * The node's addresses on every interface but kube-ipvs0 (upstream's
   * GetAllLocalAddressesExcept). Default: state.node.ips. Loopback, IPv6 link-local and
   * the other family are dropped here.
   */
  readonly nodeAddresses?: readonly string[];
  /** --ipvs-exclude-cidrs: virtual servers inside them are never deleted. */
  readonly excludeCIDRs?: readonly string[];
  /** Add `--random-fully` to the MASQUERADE rule (default true). */
  readonly randomFully?: boolean;
}

/** The options resolved for one family. */
export interface ResolvedIpvsConfig {
  readonly family: IPFamily;
  readonly scheduler: string;
  readonly masqueradeMark: string;
  readonly masqueradeAll: boolean;
  /** Matches traffic from outside the pod network, or null when unknown. */
  readonly ifNotLocal: readonly string[] | null;
  readonly randomFully: boolean;
  /** Node addresses of the family (no loopback, no link-local): externalIPs there are not bound. */
  readonly nodeAddresses: readonly string[];
  /** The addresses NodePort virtual servers are created on. */
  readonly nodePortIPs: readonly string[];
  /** The node IP loadBalancerSourceRanges are checked against (upstream's single nodeIP). */
  readonly primaryNodeIP: string | undefined;
  readonly excludeCIDRs: readonly CIDR[];
}

/** Scheduler names are short lower-case words (rr, wrr, lc, sh, mh, …). */
const SCHEDULER = /^[a-z][a-z0-9]{0,15}$/;

/** The scheduler to use: "" means rr; anything but a short lower-case word is refused. */
export function resolveScheduler(name: string | undefined): string {
  const s = name === undefined || name === "" ? "rr" : name;
  if (!SCHEDULER.test(s)) {
    throw new RangeError(`Invalid --ipvs-scheduler "${s}": expected a scheduler name such as "rr"`);
  }
  return s;
}

function isIPv6LinkLocal(ip: string): boolean {
  return /^fe[89ab][0-9a-f]:/i.test(ip);
}

/** Resolves the options for one state's family. Throws RangeError naming a bad value. */
export function resolveIpvsConfig(
  state: ProxyState,
  options: IpvsOptions = {},
): ResolvedIpvsConfig {
  const family = state.family;
  const detector = localDetectorFor(options, state.node.podCIDRs, family);
  const nodeAddresses: string[] = [];
  for (const raw of options.nodeAddresses ?? state.node.ips) {
    const ip = canonicalIP(raw);
    if (ip === null || ipFamily(ip) !== family || isLoopbackIP(ip) || isIPv6LinkLocal(ip)) continue;
    if (!nodeAddresses.includes(ip)) nodeAddresses.push(ip);
  }
  const npa = resolveNodePortAddresses(options.nodePortAddresses ?? [], family, state.node.ips[0]);
  const nodePortIPs = npa.matchAll ? nodeAddresses : selectNodePortIPs(npa, nodeAddresses);
  const excludeCIDRs: CIDR[] = [];
  for (const raw of options.excludeCIDRs ?? []) {
    const c = parseCIDR(raw.trim());
    if (c === null) {
      throw new RangeError(`Invalid --ipvs-exclude-cidrs entry "${raw}": expected a CIDR`);
    }
    excludeCIDRs.push(c);
  }
  return {
    family,
    scheduler: resolveScheduler(options.scheduler),
    masqueradeMark: masqueradeMarkText(options.masqueradeBit ?? 14),
    masqueradeAll: options.masqueradeAll ?? false,
    ifNotLocal: detector.ifNotLocal,
    randomFully: options.randomFully ?? true,
    nodeAddresses,
    nodePortIPs,
    primaryNodeIP: state.node.ips[0],
    excludeCIDRs,
  };
}

/** The IPVS options of one family, taken from the configuration. */
export function ipvsModeOptions(config: ProxyConfig, family: IPFamily): IpvsOptions {
  return {
    ...commonRenderOptions(config, family),
    scheduler: config.ipvs.scheduler,
    excludeCIDRs: config.ipvs.excludeCIDRs,
  };
}
