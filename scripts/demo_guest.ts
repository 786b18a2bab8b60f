/**
 * The demo in IPVS mode needs a kernel with IPVS, which this machine's lacks: boot the qemu
 * IPVS guest (scripts/ipvs_vm), run the very same demo inside it and forward its output live.
 */
import { startIpvsGuest } from "./ipvs_vm/mod.ts";
import { REPO_ROOT } from "./netns/mod.ts";

/** Set inside the guest so the demo runs there instead of booting another guest. */
export const DEMO_IN_GUEST_ENV = "DEMO_IN_GUEST";
/** Whether this kernel has IPVS. */
export async function kernelHasIpvs(): Promise<boolean> {
  try {
    await Deno.stat("/proc/net/ip_vs");
    return true;
  } catch {
    return false;
  }
}

const encoder = new TextEncoder();

/** Boots the guest, runs `scripts/demo.ts ARGS` in it and returns the demo's exit code. */
export async function runDemoInGuest(args: readonly string[]): Promise<number> {
  // The guest has no network: the demo and the program must be in the host's cache.
  const cached = await new Deno.Command(Deno.execPath(), {
    args: ["cache", "scripts/demo.ts", "main.ts"],
    cwd: REPO_ROOT,
  }).output();
  if (cached.code !== 0) throw new Error("deno cache scripts/demo.ts main.ts failed");
  console.log("Booting the IPVS guest (qemu, Debian's kernel; ~15-40 s under emulation)...");
  const guest = await startIpvsGuest();
  try {
    console.log(`IPVS guest ready in ${guest.bootMs} ms; running the demo inside it.`);
    const out = await guest.run({
      cmd: Deno.execPath(),
      args: ["run", "-A", "--no-check", "scripts/demo.ts", ...args],
      cwd: REPO_ROOT,
      // One emulated vCPU: the program starts several times slower than on the host.
      env: { [DEMO_IN_GUEST_ENV]: "1", E2E_TIME_SCALE: "5" },
      timeoutMs: 10 * 60_000,
    }, {
      onOutput: (stream, text) =>
        (stream === "stdout" ? Deno.stdout : Deno.stderr).writeSync(encoder.encode(text)),
    });
    if (out.code !== 0) console.error(`--- guest console\n${(await guest.console()).slice(-4000)}`);
    return out.code;
  } finally {
    await guest.stop();
    console.log("Stopped the IPVS guest.");
  }
}
