/** Polling for test conditions that become true asynchronously (real time, not a FakeClock). */

/**
 * Polls `check` every `intervalMs` until it is true; rejects after `timeoutMs` naming `what`.
 * Resolves to the milliseconds it took.
 */
export async function waitFor(
  what: string,
  check: () => boolean | Promise<boolean>,
  timeoutMs = 10_000,
  intervalMs = 20,
): Promise<number> {
  const start = Date.now();
  while (!(await check())) {
    if (Date.now() - start > timeoutMs) {
      throw new Error(`Timed out after ${timeoutMs} ms waiting for ${what}`);
    }
    await new Promise((r) => setTimeout(r, intervalMs));
  }
  return Date.now() - start;
}
