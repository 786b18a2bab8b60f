/**
 * The shape every mode's tracer has, so `trace` and the differential tests treat iptables,
 * IPVS and nftables alike: get the rules (from the kernel, read-only, or from the mode's own
 * rendering of a state) and follow one packet through them.
 */
import type { ProxyConfig } from "../config/mod.ts";
import type { CommandRunner } from "../exec/mod.ts";
import type { IPFamily, ProxyState } from "../proxy/mod.ts";
import type { TracePacket, TraceResult } from "./decision.ts";

/** What a tracer knows about the node besides its rules. */
export interface TraceNode {
  /** Every address local to the node in the packet's family (node IPs, loopback, service IPs bound locally). */
  readonly localAddresses: readonly string[];
}

/** One mode's tracer over that mode's own rule representation `Rules`. */
export interface ModeTracer<Rules> {
  /** Reads one family's rules from the kernel with read-only commands. */
  read(runner: CommandRunner, family: IPFamily): Promise<Rules>;
  /** The rules the mode renders for this state on an empty node. */
  rendered(config: ProxyConfig, state: ProxyState): Rules;
  /**
   * Adds to rules read from a kernel what the kernel does not keep but the cluster state
   * knows (IPVS: the service port name of each virtual server). Absent when nothing is missing.
   */
  withClusterState?(rules: Rules, config: ProxyConfig, state: ProxyState): Rules;
  /** Follows the packet through the rules. */
  trace(rules: Rules, packet: TracePacket, node: TraceNode): TraceResult;
}
