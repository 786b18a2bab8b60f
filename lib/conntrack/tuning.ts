/**
 * Conntrack tuning at start, as upstream kube-proxy does (cmd/kube-proxy conntrack setup):
 * raise nf_conntrack_max to maxPerCore x CPUs (at least `min`) and the hash table with it, set
 * the TCP established / close-wait timeouts, UDP timeouts and TCP be_liberal when configured.
 * Every knob goes through the `sysctl` binary (Deno refuses /proc writes under narrowed
 * permissions). A knob that cannot be set (read-only /proc/sys in a container, or a knob that
 * only the initial network namespace may change) is logged as a warning and skipped.
 */
import type { ConntrackConfig } from "../config/mod.ts";
import { type CommandRunner, ensureSysctl, type SysctlOutcome } from "../exec/mod.ts";
import type { Logger } from "../log/mod.ts";

/**
 * The nf_conntrack_max to ensure: maxPerCore x CPUs, but at least `min`; 0 (maxPerCore unset)
 * leaves the kernel's value alone.
 */
export function conntrackMax(config: Pick<ConntrackConfig, "maxPerCore" | "min">, cpus: number) {
  if (config.maxPerCore <= 0) return 0;
  return Math.max(config.maxPerCore * cpus, config.min);
}

/** One sysctl the tuning sets, with the rule for when it is set. */
export interface ConntrackKnob {
  /** Dotted sysctl name, e.g. `net.netfilter.nf_conntrack_max`. */
  readonly name: string;
  readonly value: number;
  /** "raise": only when the current value is lower (upstream's rule for max and hashsize). */
  readonly mode: "raise" | "exact";
}

const NF = "net.netfilter.";

/** The knobs to ensure for `config`, in upstream's order. Pure. */
export function conntrackKnobs(config: ConntrackConfig, cpus: number): ConntrackKnob[] {
  const knobs: ConntrackKnob[] = [];
  const max = conntrackMax(config, cpus);
  if (max > 0) {
    knobs.push({ name: `${NF}nf_conntrack_max`, value: max, mode: "raise" });
    // The hash table (the nf_conntrack module's hashsize) is sized to a quarter of the maximum.
    knobs.push({ name: `${NF}nf_conntrack_buckets`, value: Math.floor(max / 4), mode: "raise" });
  }
  const seconds = (ms: number) => Math.floor(ms / 1000);
  const timeouts: [string, number][] = [
    ["nf_conntrack_tcp_timeout_established", config.tcpEstablishedTimeoutMs],
    ["nf_conntrack_tcp_timeout_close_wait", config.tcpCloseWaitTimeoutMs],
  ];
  for (const [name, ms] of timeouts) {
    if (seconds(ms) > 0) knobs.push({ name: NF + name, value: seconds(ms), mode: "exact" });
  }
  if (config.tcpBeLiberal) {
    knobs.push({ name: `${NF}nf_conntrack_tcp_be_liberal`, value: 1, mode: "exact" });
  }
  const udp: [string, number][] = [
    ["nf_conntrack_udp_timeout", config.udpTimeoutMs],
    ["nf_conntrack_udp_timeout_stream", config.udpStreamTimeoutMs],
  ];
  for (const [name, ms] of udp) {
    if (seconds(ms) > 0) knobs.push({ name: NF + name, value: seconds(ms), mode: "exact" });
  }
  return knobs;
}

/** Options for tuneConntrack. */
export interface ConntrackTuningOptions {
  readonly config: ConntrackConfig;
  readonly runner: CommandRunner;
  readonly logger: Logger;
  /** CPUs on the node; defaults to navigator.hardwareConcurrency. */
  readonly cpus?: number;
}

/** Applies the conntrack tuning; never throws for a refused knob. Returns each knob's outcome. */
export async function tuneConntrack(
  options: ConntrackTuningOptions,
): Promise<Map<string, SysctlOutcome>> {
  const cpus = options.cpus ?? navigator.hardwareConcurrency;
  const outcomes = new Map<string, SysctlOutcome>();
  for (const knob of conntrackKnobs(options.config, cpus)) {
    const outcome = await ensureSysctl(options.runner, knob.name, knob.value, options.logger, {
      mode: knob.mode,
      what: "conntrack sysctl",
    });
    outcomes.set(knob.name, outcome);
  }
  return outcomes;
}
