/**
 * `deno task bench`, IPVS group. This machine's kernel has no IPVS, so the group boots the
 * qemu IPVS guest once (scripts/ipvs_vm) and runs `deno bench` on
 * bench/ipvs_guest/ipvs_sync_guest.ts inside it; the guest's table (printed as it runs) holds
 * the figures: the proxier's full sync and one-endpoint sync against the raw batch apply of
 * the same payload. The host-side row only times the whole guest run (boot included).
 *
 * IPVS_BENCH_SCALE (default 1 = 10,000 services × 10 endpoints) scales the
 * services; IPVS_BENCH_RUNS (default 2) is the iterations of each full-sync case.
 * Targets: full sync ≤ 1.2× the raw apply; one change ≤ 50 ms + the raw apply.
 */
import { startIpvsGuest } from "../scripts/ipvs_vm/mod.ts";

const REPO_ROOT = decodeURIComponent(new URL("../", import.meta.url).pathname);
const GUEST_FILE = "bench/ipvs_guest/ipvs_sync_guest.ts";
/** 10k × 10 under one emulated vCPU: setup syncs four times before the timed runs. */
const GUEST_TIMEOUT_MS = 60 * 60_000;
const encoder = new TextEncoder();

function passEnv(names: readonly string[]): Record<string, string> {
  const env: Record<string, string> = { NO_COLOR: "1" };
  for (const name of names) {
    const value = Deno.env.get(name);
    if (value !== undefined) env[name] = value;
  }
  return env;
}

/** deno bench calls a bench function once more than `n` says: boot and run only once. */
let guestRun: Promise<void> | undefined;

Deno.bench({
  group: "ipvs (in the qemu guest; its own table above)",
  name: "boot the IPVS guest and run its bench file",
  n: 1,
  warmup: 0,
  // An async function: deno bench awaits only those.
  async fn() {
    await (guestRun ??= runInGuest());
  },
});

/** Boots the guest, runs the in-guest bench file there with its output shown live, stops it. */
async function runInGuest(): Promise<void> {
  // The guest has no network: what the file imports must be in the host's cache already.
  const cached = await new Deno.Command(Deno.execPath(), {
    args: ["cache", GUEST_FILE],
    cwd: REPO_ROOT,
  }).output();
  if (cached.code !== 0) throw new Error(`deno cache ${GUEST_FILE} failed`);
  const guest = await startIpvsGuest({ memoryMiB: 3072 });
  try {
    console.log(`IPVS guest ready in ${guest.bootMs} ms`);
    const out = await guest.run({
      cmd: Deno.execPath(),
      args: ["bench", "-A", "--no-check", GUEST_FILE],
      cwd: REPO_ROOT,
      env: passEnv(["IPVS_BENCH_SCALE", "IPVS_BENCH_RUNS", "IPVS_BENCH_SETTLE_MS"]),
      timeoutMs: GUEST_TIMEOUT_MS,
    }, {
      onOutput: (stream, text) =>
        (stream === "stdout" ? Deno.stdout : Deno.stderr).writeSync(encoder.encode(text)),
    });
    if (out.code !== 0) {
      console.error(`--- guest console\n${(await guest.console()).slice(-4000)}`);
      throw new Error(`deno bench in the IPVS guest exited ${out.code}`);
    }
  } finally {
    await guest.stop();
  }
}
