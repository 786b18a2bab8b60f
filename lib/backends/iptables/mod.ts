/**
 * Public face of lib/backends/iptables: iptables mode as the registry lists it, and all that
 * lies outside this folder sees of it. Its config section comes with it; the mode itself
 * (mode.ts: proxier, render, metrics, tracer) loads on first use. Its cleanup is the iptables
 * cleanup of lib/netfilter, which removes the chains of both iptables-writing modes.
 */
import type { ProxyMode } from "../mode.ts";
import { iptablesConfigSection } from "./config_section.ts";

/** iptables mode: what `--proxy-mode iptables` runs. */
export const iptablesMode: ProxyMode<"iptables"> = {
  name: "iptables",
  configSection: iptablesConfigSection,
  load: async () => (await import("./mode.ts")).iptablesMode,
  cleanup: async (runner, logger) =>
    (await import("../../netfilter/mod.ts")).cleanupIptables(runner, logger),
};
