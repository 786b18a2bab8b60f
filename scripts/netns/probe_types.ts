/** Types shared by scripts/probe.ts (which prints them as JSON) and the harness (which reads them). */

/** Transport a probe uses. */
export type ProbeProto = "tcp" | "udp";

/**
 * Why an attempt failed. `refused`: TCP RST or ICMP port unreachable (REJECT);
 * `timeout`: no answer in time (DROP); `unreachable`: no route or ICMP host/net unreachable;
 * `reset`: connected, then reset; `empty`: connected but no echo line; `error`: anything else.
 */
export type ProbeErrorKind = "refused" | "timeout" | "unreachable" | "reset" | "empty" | "error";

/** One attempt's outcome: who answered and the client address it saw, or why nothing did. */
export type ProbeAnswer =
  | { readonly ok: true; readonly name: string; readonly peer: string }
  | { readonly ok: false; readonly error: ProbeErrorKind; readonly detail?: string };

/** One probe batch, as given to scripts/probe.ts on its command line. */
export interface ProbeSpec {
  readonly proto: ProbeProto;
  /** Destination `ip:port`, IPv6 as `[ip]:port`. */
  readonly to: string;
  /** Attempts to make; default 1. */
  readonly count?: number;
  /** Per-attempt deadline in milliseconds; default 1000. */
  readonly timeoutMs?: number;
  /** UDP only: bind every attempt to this local port (a client reusing its source port). */
  readonly sourcePort?: number;
  /** Attempts in flight at once; default 16, forced to 1 with a fixed source port. */
  readonly concurrency?: number;
}

/** Converts a spec to scripts/probe.ts flags, so the harness and the CLI cannot drift apart. */
export function probeArgs(spec: ProbeSpec): string[] {
  const args = ["--proto", spec.proto, "--to", spec.to];
  if (spec.count !== undefined) args.push("--count", String(spec.count));
  if (spec.timeoutMs !== undefined) args.push("--timeout-ms", String(spec.timeoutMs));
  if (spec.sourcePort !== undefined) args.push("--source-port", String(spec.sourcePort));
  if (spec.concurrency !== undefined) args.push("--concurrency", String(spec.concurrency));
  return args;
}
