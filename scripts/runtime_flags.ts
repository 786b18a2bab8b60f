/**
 * The Deno and V8 flags the program runs with, wherever it is started: `deno task start`/`render`
 * (deno.json, kept equal by a test), `deno task compile` (baked into the binary) and the e2e tests
 * and benches (scripts/netns proxyRunArgs).
 */

/**
 * `--no-code-cache`: Deno keeps V8's compiled code of every module in a cache and hands it back
 * to V8 on the next start, which then holds code for functions the proxy never calls, plus the
 * cache file's mapped pages. Without it V8 compiles only what runs: at 1,000 services the
 * program settled at 79.0 MB instead of 82.8 and peaked at 90.8 instead of 93.7 (medians of 5
 * alternating runs), and reached its first complete sync no later (1.81 against 1.91 s).
 */
export const PROXY_DENO_FLAGS: readonly string[] = ["--no-code-cache"];

/**
 * Caps each young-generation semi-space at 2 MB. Decoding the initial lists keeps most young
 * objects alive, so V8 grows the semi-spaces to their 16 MB default maximum and never shrinks
 * them while the proxy idles: ~30 MB of resident memory at 1,000 services, ~140 MB at 10,000.
 * Measured with 1,000 and 10,000 services: no slower first sync (faster at 10,000).
 *
 * `--expose-gc` lets the app run one full collection once syncs go quiet
 * (lib/app/memory_reclaim.ts): V8 under Deno never collects at idle on its own.
 *
 * `--no-memory-reducer` turns off V8's own idle shrinking, which that collection replaces. Under
 * Deno its timer fires only when something else wakes the process (the canary check, 30 s after
 * start), and then it ran two more full collections that freed nothing: at 1,000 services, 60 s
 * of idle took 100 ms of the program's CPU with it and 20 ms without (median of 3 runs each).
 *
 * `--no-concurrent-recompilation` has Maglev and TurboFan compile hot functions on the JS thread
 * instead of V8's worker threads. The workers' compiler scratch memory came from their own glibc
 * arenas, which kept it once freed (2.0 and 2.4 MB held for 0.14 MB in use, by `malloc_stats()`
 * in the settled program): at 1,000 services it settled at 87 MB instead of 82 and peaked at 97
 * instead of 93 (medians of 5 alternating runs). The ~115 compilations of a start-up at 1,000
 * services cost no measurable time on the JS thread (start → complete 1.62 against 1.60 s; 15.4 s
 * against 16-18 s at 10,000, on 2 cores where the worker competed with iptables-restore).
 *
 * `--no-allocation-site-pretenuring` keeps V8 from allocating straight into the old generation
 * the objects of code whose earlier objects survived (allocation-site pretenuring). Decoding the
 * lists teaches it that, so the first render's lines and slices then went to the old generation
 * and stayed there, dead, until the quiet-time collection: 11 MB more old-space objects at the
 * end of the first sync at 1,000 services, 4-5 MB with the flag. At 1,000 services (medians of 5
 * alternating runs) the start-up peak was 85 MB instead of 90, and 87 instead of 94 after a
 * later full sync; settled memory, start-up time and render time did not move, nor did anything
 * at 10,000 services (2 runs each).
 *
 * `--no-opt` leaves Maglev as V8's top tier: TurboFan never runs, so its code pages in the
 * `deno` binary are never touched and its compiler memory is never allocated. At 1,000 services
 * (4 alternating runs each, 2026-11-28) the start-up peak was 79.9-81.2 MB instead of 82.6-86.8
 * (iptables-nft restart: 82.4-85.3 instead of 86.5-86.6), settled 72.6-74.2 instead of
 * 75.3-77.5; start → complete, a warm or cold render (1,000 and 10,000 services), an endpoint
 * change's sync and the list of 20,000 objects took as long either way (see the README).
 */
export const PROXY_V8_FLAGS: readonly string[] = [
  "--max-semi-space-size=2",
  "--expose-gc",
  "--no-memory-reducer",
  "--no-concurrent-recompilation",
  "--no-allocation-site-pretenuring",
  "--no-opt",
];

/** The `deno run`/`deno compile` argument that sets PROXY_V8_FLAGS. */
export function v8FlagsArg(): string {
  return `--v8-flags=${PROXY_V8_FLAGS.join(",")}`;
}

/** The `deno run`/`deno compile` arguments that set PROXY_DENO_FLAGS and PROXY_V8_FLAGS. */
export function runtimeArgs(): string[] {
  return [...PROXY_DENO_FLAGS, v8FlagsArg()];
}
