/**
 * The settings every mode's renderer (and the trace model) takes from the configuration, for
 * one IP family.
 */
import { type IPFamily, parseCIDR } from "../net/mod.ts";
import type { LocalMode, ProxyConfig } from "./types.ts";

/** Masquerade, local-traffic detection and NodePort addresses, filtered to one family. */
export interface CommonRenderOptions {
  readonly masqueradeBit: number;
  readonly masqueradeAll: boolean;
  /** --cluster-cidr values of this family. */
  readonly clusterCIDRs: readonly string[];
  readonly detectLocalMode: LocalMode;
  readonly bridgeInterface: string;
  readonly interfaceNamePrefix: string;
  /** --nodeport-addresses entries of this family, and `primary`. */
  readonly nodePortAddresses: readonly string[];
}

/** The common render settings of `family`, taken from the configuration. */
export function commonRenderOptions(config: ProxyConfig, family: IPFamily): CommonRenderOptions {
  return {
    masqueradeBit: config.masqueradeBit,
    masqueradeAll: config.masqueradeAll,
    clusterCIDRs: config.clusterCIDRs.filter((c) => parseCIDR(c)?.family === family),
    detectLocalMode: config.detectLocalMode,
    bridgeInterface: config.detectLocal.bridgeInterface.trim(),
    interfaceNamePrefix: config.detectLocal.interfaceNamePrefix.trim(),
    nodePortAddresses: config.nodePortAddresses.filter((a) =>
      a === "primary" || parseCIDR(a)?.family === family
    ),
  };
}
