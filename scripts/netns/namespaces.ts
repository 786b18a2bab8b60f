/** Creating, emptying and deleting network namespaces through iproute2. */
import { type CommandRunner, denoCommandRunner, runChecked } from "../../lib/exec/mod.ts";

/** Throws a clear error unless we are root with iproute2 and sysctl, as real-kernel tests need. */
export async function requireNetnsSupport(
  runner: CommandRunner = denoCommandRunner,
): Promise<void> {
  if (Deno.uid() !== 0) {
    throw new Error(
      `Real-kernel tests need root (uid is "${Deno.uid()}"): run them as root, e.g. in CI`,
    );
  }
  for (const [cmd, args] of [["ip", ["-V"]], ["sysctl", ["-V"]]] as const) {
    const out = await runner({ cmd, args });
    if (out.code !== 0) {
      throw new Error(
        `Real-kernel tests need "${cmd}" (exit ${out.code}): run scripts/install_test_deps.sh`,
      );
    }
  }
}

/** Throws naming every command missing from PATH (and the sbin dirs), so e2e tests fail loudly. */
export function requireCommands(cmds: readonly string[]): void {
  const dirs = [...(Deno.env.get("PATH") ?? "").split(":"), "/usr/sbin", "/sbin"];
  const found = (cmd: string) =>
    dirs.some((d) => {
      try {
        return d !== "" && Deno.statSync(`${d}/${cmd}`).isFile;
      } catch {
        return false;
      }
    });
  const missing = cmds.filter((c) => !found(c));
  if (missing.length > 0) {
    throw new Error(
      `Real-kernel tests need ${
        missing.map((c) => `"${c}"`).join(", ")
      }: run scripts/install_test_deps.sh as root`,
    );
  }
}

/** Names of the existing network namespaces. */
export async function listNamespaces(runner: CommandRunner = denoCommandRunner): Promise<string[]> {
  const out = await runChecked(runner, { cmd: "ip", args: ["netns", "list"] });
  return out.split("\n").map((l) => l.split(" ")[0] ?? "").filter((n) => n !== "");
}

/** Creates namespaces in one `ip -batch` call. */
export async function addNamespaces(
  names: readonly string[],
  runner: CommandRunner = denoCommandRunner,
): Promise<void> {
  const stdin = names.map((n) => `netns add ${n}\n`).join("");
  await runChecked(runner, { cmd: "ip", args: ["-batch", "-"], stdin });
}

/** SIGKILLs every process still inside a namespace (all of them were started by the harness). */
export async function killNamespacePids(
  name: string,
  runner: CommandRunner = denoCommandRunner,
): Promise<number[]> {
  const out = await runner({ cmd: "ip", args: ["netns", "pids", name] });
  if (out.code !== 0) return [];
  const pids = out.stdout.split("\n").filter((l) => /^\d+$/.test(l)).map(Number);
  for (const pid of pids) {
    try {
      Deno.kill(pid, "SIGKILL");
    } catch {
      // It exited on its own meanwhile.
    }
  }
  return pids;
}

/** Empties and deletes namespaces, tolerating ones already gone; returns those that remain. */
export async function deleteNamespaces(
  names: readonly string[],
  runner: CommandRunner = denoCommandRunner,
): Promise<string[]> {
  if (names.length === 0) return [];
  await Promise.all(names.map((n) => killNamespacePids(n, runner)));
  const stdin = names.map((n) => `netns del ${n}\n`).join("");
  await runner({ cmd: "ip", args: ["-force", "-batch", "-"], stdin });
  const left = new Set(await listNamespaces(runner));
  return names.filter((n) => left.has(n));
}

/** Deletes namespaces `<prefix>-*` left behind by a crashed earlier run with the same prefix. */
export async function deleteStaleNamespaces(
  prefix: string,
  runner: CommandRunner = denoCommandRunner,
): Promise<string[]> {
  const stale = (await listNamespaces(runner)).filter((n) => n.startsWith(`${prefix}-`));
  const left = await deleteNamespaces(stale, runner);
  if (left.length > 0) {
    throw new Error(`Cannot delete stale namespaces ${left.map((n) => `"${n}"`).join(", ")}`);
  }
  return stale;
}

/** Sets sysctls inside a namespace in one `ip netns exec ... sysctl -w` call. */
export async function setSysctls(
  name: string,
  assignments: readonly string[],
  runner: CommandRunner = denoCommandRunner,
): Promise<void> {
  if (assignments.length === 0) return;
  await runChecked(runner, {
    cmd: "ip",
    args: ["netns", "exec", name, "sysctl", "-q", "-w", ...assignments],
  });
}

/** Runs `ip -batch` lines inside a namespace. */
export async function ipBatch(
  name: string,
  lines: readonly string[],
  runner: CommandRunner = denoCommandRunner,
): Promise<void> {
  if (lines.length === 0) return;
  await runChecked(runner, {
    cmd: "ip",
    args: ["-n", name, "-batch", "-"],
    stdin: lines.map((l) => `${l}\n`).join(""),
  });
}
