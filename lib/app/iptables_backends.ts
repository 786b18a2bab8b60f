/** Builds one iptables proxier per IP family from the configuration (upstream's dual-stack setup). */
import type { ProxyConfig } from "../config/mod.ts";
import {
  createIptablesProxier,
  type IptablesFlavour,
  type IptablesRenderOptions,
  localTrafficDetector,
} from "../backends/iptables/mod.ts";
import type { BackendMetrics } from "../backends/mod.ts";
import type { CommandRunner } from "../exec/mod.ts";
import type { Logger } from "../log/mod.ts";
import { ipCommandAddressLister, parseCIDR } from "../net/mod.ts";
import type { IPFamily } from "../proxy/mod.ts";
import type { FamilyBackend } from "./proxy_app.ts";

/** The render options of one family, taken from the configuration. */
export function iptablesRenderOptions(
  config: ProxyConfig,
  family: IPFamily,
): IptablesRenderOptions {
  const detectLocal = {
    mode: config.detectLocalMode,
    bridgeInterface: config.detectLocal.bridgeInterface.trim(),
    interfaceNamePrefix: config.detectLocal.interfaceNamePrefix.trim(),
  };
  // Fail at startup, not at every sync, on an interface name that cannot go into a rule.
  localTrafficDetector(detectLocal, family);
  return {
    masqueradeBit: config.masqueradeBit,
    masqueradeAll: config.masqueradeAll,
    clusterCIDRs: config.clusterCIDRs.filter((c) => parseCIDR(c)?.family === family),
    detectLocalMode: detectLocal.mode,
    bridgeInterface: detectLocal.bridgeInterface,
    interfaceNamePrefix: detectLocal.interfaceNamePrefix,
    localhostNodePorts: config.iptables.localhostNodePorts,
    nodePortAddresses: config.nodePortAddresses.filter((a) =>
      a === "primary" || parseCIDR(a)?.family === family
    ),
  };
}

/** Options for createIptablesBackends. */
export interface IptablesBackendsOptions {
  readonly config: ProxyConfig;
  readonly flavour: IptablesFlavour;
  readonly families: readonly IPFamily[];
  readonly runner: CommandRunner;
  readonly logger: Logger;
  /** Each family's backend counts its failures under its own ip_family label. */
  readonly metrics: { forFamily(family: IPFamily): BackendMetrics };
}

/** One proxier per family, all with the same flavour. */
export function createIptablesBackends(options: IptablesBackendsOptions): FamilyBackend[] {
  return options.families.map((family) => ({
    family,
    backend: createIptablesProxier({
      ...iptablesRenderOptions(options.config, family),
      family,
      flavour: options.flavour,
      runner: options.runner,
      logger: options.logger,
      metrics: options.metrics.forFamily(family),
      listLocalAddresses: ipCommandAddressLister(options.runner),
    }),
  }));
}

/** The families to proxy: IPv4 always, IPv6 when ip6tables works on this node. */
export async function usableFamilies(
  runner: CommandRunner,
  flavour: IptablesFlavour,
): Promise<IPFamily[]> {
  const v6 = await runner({ cmd: `ip6tables-${flavour}-save`, args: ["-t", "nat"] });
  return v6.code === 0 ? ["IPv4", "IPv6"] : ["IPv4"];
}
