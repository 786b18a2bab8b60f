/**
 * The Deno and V8 flags the program runs with, wherever it is started: `deno task start`/`render`
 * (deno.json, kept equal by a test), `deno task compile` (baked into the binary) and the e2e tests
 * and benches (scripts/netns proxyRunArgs).
 */

/**
 * `--no-code-cache`: Deno keeps V8's compiled code of every module in a cache and hands it back
 * to V8 on the next start, which then holds code for functions the proxy never calls, plus the
 * cache file's mapped pages. Without it V8 compiles only what runs, so both settled and peak
 * memory are lower, and the first complete sync comes no later (docs/performance.md).
 */
export const PROXY_DENO_FLAGS: readonly string[] = ["--no-code-cache"];

/**
 * Caps each young-generation semi-space at 2 MB. Decoding the initial lists keeps most young
 * objects alive, so V8 would grow the semi-spaces to their default maximum and never shrink
 * them while the proxy idles; the cap keeps the young generation small so settled memory stays
 * low, without slowing the first sync.
 *
 * `--expose-gc` lets the app run one full collection once syncs go quiet
 * (lib/app/memory_reclaim.ts): V8 under Deno never collects at idle on its own.
 *
 * `--no-memory-reducer` turns off V8's own idle shrinking, which that collection replaces. Under
 * Deno its timer fires only when something else wakes the process (such as the periodic canary
 * check), and then it runs more full collections that free nothing: most of the idle CPU.
 *
 * `--no-concurrent-recompilation` has Maglev and TurboFan compile hot functions on the JS thread
 * instead of V8's worker threads. The workers' compiler scratch memory comes from their own
 * glibc arenas, which keep it once freed (`malloc_stats()` shows megabytes held for little in
 * use), raising both settled and peak memory. The compilations of a start-up cost no
 * measurable time on the JS thread, and on a small machine the worker would compete with
 * iptables-restore anyway.
 *
 * `--no-allocation-site-pretenuring` keeps V8 from allocating straight into the old generation
 * the objects of code whose earlier objects survived (allocation-site pretenuring). Decoding the
 * lists teaches it that, so without the flag the first render's lines and slices go to the old
 * generation and stay there, dead, until the quiet-time collection, raising the start-up peak
 * and the peak of a later full sync. Settled memory, start-up time and render time are the same
 * either way.
 *
 * `--no-opt` leaves Maglev as V8's top tier: TurboFan never runs, so its code pages in the
 * `deno` binary are never touched and its compiler memory is never allocated: peak and settled
 * memory are lower, while start-up, renders, an endpoint change's sync and decoding the lists
 * take as long as with TurboFan (docs/performance.md).
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
