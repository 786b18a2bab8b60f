/**
 * How much slower than a native machine the real-kernel tests run: `E2E_TIME_SCALE` (the IPVS
 * guest, emulated by qemu TCG on one vCPU, sets it), default 1. Waits for processes to become
 * ready are multiplied by it, and so are the timeouts of probes that expect an answer (the echo
 * servers and the probe are processes on the same starved CPU); probes that expect a timeout
 * or a refusal are not, since they time packets, not processes.
 */

/** The factor from E2E_TIME_SCALE; 1 when unset or not a number ≥ 1. */
export function e2eTimeScale(): number {
  const raw = Deno.env.get("E2E_TIME_SCALE");
  const n = raw === undefined ? 1 : Number(raw);
  return Number.isFinite(n) && n >= 1 ? n : 1;
}

/** `ms` multiplied by the time scale. */
export function scaledMs(ms: number): number {
  return Math.round(ms * e2eTimeScale());
}
