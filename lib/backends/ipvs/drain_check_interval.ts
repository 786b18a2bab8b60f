/**
 * The test-only seam for the graceful-termination check interval. Upstream checks draining
 * real servers every minute (rsCheckDeleteInterval) and offers no way to change it; the
 * real-kernel tests cannot wait minutes, so the environment variable below may shorten it.
 * Operators never need it: unset, the interval is upstream's minute.
 */
import { parseDuration } from "../../config/mod.ts";
import type { Logger } from "../../log/mod.ts";
import { RS_CHECK_DELETE_INTERVAL_MS } from "./_graceful_termination.ts";

/** Test only: a Go duration ("2s") replacing the 1-minute drain check of IPVS mode. */
export const DRAIN_CHECK_INTERVAL_ENV = "KUBE_PROXY_IPVS_DRAIN_CHECK_INTERVAL";

/** The shortest interval accepted, so a typo cannot make the check spin. */
export const MIN_DRAIN_CHECK_INTERVAL_MS = 100;

/**
 * The drain-check interval from `DRAIN_CHECK_INTERVAL_ENV`: upstream's minute when unset; a
 * value that is not a duration of at least 100 ms is logged and ignored.
 */
export function drainCheckIntervalMs(
  env: (name: string) => string | undefined,
  logger: Logger,
): number {
  const raw = env(DRAIN_CHECK_INTERVAL_ENV);
  if (raw === undefined || raw === "") return RS_CHECK_DELETE_INTERVAL_MS;
  let ms = Number.NaN;
  try {
    ms = parseDuration(raw.trim());
  } catch {
    // Reported below with the other invalid values.
  }
  if (!(ms >= MIN_DRAIN_CHECK_INTERVAL_MS)) {
    logger.error(
      `Invalid ${DRAIN_CHECK_INTERVAL_ENV} "${raw}": expected a duration of at least 100ms such as "2s"; using 1m`,
    );
    return RS_CHECK_DELETE_INTERVAL_MS;
  }
  logger.info("IPVS drain check interval set for testing", {
    env: DRAIN_CHECK_INTERVAL_ENV,
    intervalMs: ms,
  });
  return ms;
}
