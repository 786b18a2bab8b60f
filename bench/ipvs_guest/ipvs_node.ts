/**
 * The IPVS node of the in-guest benchmarks: an empty starting state, the raw batch apply the
 * proxier is measured against, and the checks that a sync really landed. Runs in the guest's
 * root network namespace; it needs IPVS (fails loudly anywhere else).
 */
import { KUBE_IPVS_DEVICE } from "../../lib/backends/ipvs/cleanup.ts";
import { type CommandInput, denoCommandRunner } from "../../lib/exec/mod.ts";

/** The IPv4 iptables flavour the benchmarks use (the faster one, as bench/iptables_bench.ts). */
export const BENCH_IPTABLES_RESTORE = "iptables-legacy-restore";

/** Pause after a reset, for the kernel's deferred freeing (IPVS_BENCH_SETTLE_MS, default 5 s). */
const SETTLE_MS = Number(Deno.env.get("IPVS_BENCH_SETTLE_MS") ?? "5000");

/** Throws unless this kernel has IPVS (i.e. we run inside the guest). */
export async function requireIpvsKernel(): Promise<void> {
  try {
    await Deno.stat("/proc/net/ip_vs");
  } catch {
    throw new Error(
      "No IPVS in this kernel (/proc/net/ip_vs is missing): run this through bench/ipvs_bench.ts, which boots the IPVS guest",
    );
  }
}

async function must(input: CommandInput, okCodes: readonly number[] = [0]): Promise<string> {
  const out = await denoCommandRunner(input);
  if (!okCodes.includes(out.code)) {
    throw new Error(
      `${input.cmd} ${input.args.join(" ")} exited ${out.code}: ${out.stderr.trim().slice(0, 500)}`,
    );
  }
  return out.stdout;
}

/**
 * Empties the node: no virtual servers, no iptables rules or chains in nat and filter (a
 * restore without --noflush flushes and deletes them), no ipsets, no kube-ipvs0.
 */
export async function resetIpvsNode(): Promise<void> {
  await must({ cmd: "ipvsadm", args: ["-C"] });
  await must({
    cmd: BENCH_IPTABLES_RESTORE,
    args: ["-w"],
    stdin: "*nat\nCOMMIT\n*filter\nCOMMIT\n",
  });
  await must({ cmd: "ipset", args: ["destroy"] });
  // 1: no such device, which is what we want.
  await must({ cmd: "ip", args: ["link", "del", KUBE_IPVS_DEVICE] }, [0, 1]);
  // The kernel frees what was deleted (real servers, the device and its routes) after these
  // commands return; on one emulated vCPU that takes seconds. Let it finish before a timed
  // apply starts, or whichever case runs first after a reset pays for it.
  await new Promise((r) => setTimeout(r, SETTLE_MS));
}

/** Virtual servers the kernel holds, counted from /proc/net/ip_vs. */
export async function countVirtualServers(): Promise<number> {
  const text = await Deno.readTextFile("/proc/net/ip_vs");
  let n = 0;
  for (const line of text.split("\n")) if (/^(TCP|UDP|SCTP) /.test(line)) n++;
  return n;
}

/** The writes of one sync, as the minimal raw batch: one process per tool. */
export interface RawWrites {
  /** `ip -force -batch -` input: kube-ipvs0 (if created) and every address change. */
  readonly ipBatch: string;
  /** `ipset restore` input, "" when the sync changed no set. */
  readonly ipsetRestore: string;
  /** `ipvsadm -R` input, "" when the sync changed no virtual or real server. */
  readonly ipvsadmRestore: string;
  /** `iptables-restore` input, "" when the sync left the rules alone. */
  readonly iptablesRestore: string;
  /** The arguments the proxier gave iptables-restore. */
  readonly iptablesArgs: readonly string[];
}

/**
 * Picks the writes out of the commands one proxier sync ran (reads are dropped): `ip link
 * add` and the address batches become one `ip -batch`, the rest is kept as sent. A partial
 * sync may write no sets and no rules; a full one from empty (`createDevice`) writes both.
 */
export function ipvsWrites(
  commands: readonly CommandInput[],
  opts: { createDevice: boolean },
): RawWrites {
  let ipBatch = opts.createDevice ? `link add ${KUBE_IPVS_DEVICE} type dummy\n` : "";
  let ipsetRestore = "", ipvsadmRestore = "", iptablesRestore = "";
  let iptablesArgs: readonly string[] = [];
  for (const c of commands) {
    if (c.cmd === "ip" && c.args.includes("-batch")) ipBatch += c.stdin ?? "";
    else if (c.cmd === "ipset" && c.args[0] === "restore") ipsetRestore += c.stdin ?? "";
    else if (c.cmd === "ipvsadm" && c.args[0] === "-R") ipvsadmRestore += c.stdin ?? "";
    else if (c.cmd === BENCH_IPTABLES_RESTORE) {
      iptablesRestore = c.stdin ?? "";
      iptablesArgs = c.args;
    }
  }
  if (opts.createDevice && (iptablesRestore === "" || ipsetRestore === "")) {
    throw new Error("The recorded full sync wrote no ipset or iptables restore input");
  }
  return { ipBatch, ipsetRestore, ipvsadmRestore, iptablesRestore, iptablesArgs };
}

/**
 * The floor: the same payload piped straight into each tool, one process each, in the order
 * the proxier writes (sets, virtual servers, addresses, rules), so both meet the same kernel.
 */
export async function rawApply(w: RawWrites): Promise<void> {
  if (w.ipsetRestore !== "") {
    await must({ cmd: "ipset", args: ["restore"], stdin: w.ipsetRestore });
  }
  if (w.ipvsadmRestore !== "") {
    await must({ cmd: "ipvsadm", args: ["-R"], stdin: w.ipvsadmRestore });
  }
  if (w.ipBatch !== "") {
    await must({ cmd: "ip", args: ["-force", "-batch", "-"], stdin: w.ipBatch });
  }
  if (w.iptablesRestore !== "") {
    await must({
      cmd: BENCH_IPTABLES_RESTORE,
      args: [...w.iptablesArgs],
      stdin: w.iptablesRestore,
    });
  }
}
