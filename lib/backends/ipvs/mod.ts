/**
 * Public face of lib/backends/ipvs: IPVS mode as the registry lists it, and all that lies
 * outside this folder sees of it. Its config section comes with it; the mode itself (mode.ts:
 * proxier, render, metrics, tracer), its cleanup and its leftovers passes load on first use.
 */
import type { ProxyMode } from "../mode.ts";
import { ipvsConfigSection } from "./config_section.ts";

const leftovers = () => import("./leftovers.ts");

/**
 * IPVS mode: what `--proxy-mode ipvs` runs. Its leftovers go another way than `--cleanup`
 * (only what IPVS mode made, its flows handed over first), and starting it keeps the iptables
 * chains it shares with iptables mode (leftovers.ts).
 */
export const ipvsMode: ProxyMode<"ipvs"> = {
  name: "ipvs",
  configSection: ipvsConfigSection,
  load: async () => (await import("./mode.ts")).ipvsMode,
  cleanup: async (runner, logger) => (await import("./cleanup.ts")).cleanupIpvs(runner, logger),
  removesLeftoversOf: {
    iptables: async (runner, logger) =>
      (await leftovers()).removeIptablesLeftoversForIpvsMode(runner, logger),
  },
  leftoversWhen: {
    iptables: async (runner, logger) =>
      (await leftovers()).removeIpvsLeftoversForIptablesMode(runner, logger),
    nftables: async (runner, logger) => (await leftovers()).removeIpvsModeLeftovers(runner, logger),
  },
};
