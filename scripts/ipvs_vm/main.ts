/**
 * Boots the IPVS test guest, runs one command in it, prints its output and exits with its code:
 *
 *   deno run -A scripts/ipvs_vm/main.ts -- ipvsadm -Ln
 *
 * Environment: IPVS_VM_TIMEOUT_MS (the command's timeout, default 600000).
 */
import { startIpvsGuest } from "./mod.ts";

if (import.meta.main) {
  const argv = Deno.args[0] === "--" ? Deno.args.slice(1) : [...Deno.args];
  const [cmd, ...args] = argv;
  if (cmd === undefined) {
    console.error("Usage: deno run -A scripts/ipvs_vm/main.ts -- CMD [ARGS...]");
    Deno.exit(1);
  }
  const timeoutMs = Number(Deno.env.get("IPVS_VM_TIMEOUT_MS") ?? 600_000);
  const launched = Date.now();
  const guest = await startIpvsGuest();
  let code = 2;
  try {
    console.error(`ipvs-vm: guest ready in ${guest.bootMs} ms`);
    const started = Date.now();
    const out = await guest.run({ cmd, args, cwd: Deno.cwd(), timeoutMs });
    await Deno.stdout.write(new TextEncoder().encode(out.stdout));
    await Deno.stderr.write(new TextEncoder().encode(out.stderr));
    console.error(`ipvs-vm: command exited ${out.code} after ${Date.now() - started} ms`);
    code = out.code;
  } finally {
    await guest.stop();
  }
  console.error(`ipvs-vm: total ${Date.now() - launched} ms`);
  Deno.exit(code);
}
