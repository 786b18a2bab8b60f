/**
 * The configuration's say in how the tracker sees this node and picks endpoints: --node-ip,
 * --bind-address (the primary IP override) and the PreferSameTrafficDistribution gate. Every
 * command that builds a tracker (the proxy, render, trace) takes them from here, so they agree.
 */
import { featureEnabled, primaryNodeIPOverride, type ProxyConfig } from "../config/mod.ts";
import type { ProxyTrackerOptions } from "../proxy/mod.ts";

/** The tracker options that come from the configuration. */
export type TrackerSettings = Pick<
  ProxyTrackerOptions,
  "fallbackNodeIPs" | "primaryNodeIP" | "topology"
>;

/** The tracker options `config` asks for. */
export function trackerSettings(config: ProxyConfig): TrackerSettings {
  const primary = primaryNodeIPOverride(config.bindAddress);
  return {
    fallbackNodeIPs: config.nodeIPs,
    ...(primary !== null ? { primaryNodeIP: primary } : {}),
    topology: {
      nodeHints: featureEnabled(config.featureGates, "PreferSameTrafficDistribution"),
    },
  };
}
