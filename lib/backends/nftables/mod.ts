/**
 * Public face of lib/backends/nftables: nftables mode as the registry lists it, and all that
 * lies outside this folder sees of it. Its config section comes with it; the mode itself
 * (mode.ts: proxier, render, metrics, tracer) and its cleanup load on first use.
 */
import type { ProxyMode } from "../mode.ts";
import { nftablesConfigSection } from "./config_section.ts";

/** nftables mode: what `--proxy-mode nftables` runs. */
export const nftablesMode: ProxyMode<"nftables"> = {
  name: "nftables",
  configSection: nftablesConfigSection,
  load: async () => (await import("./mode.ts")).nftablesMode,
  cleanup: async (runner, logger) => (await import("./cleanup.ts")).cleanupNftables(runner, logger),
};
