/**
 * A state-holding fake of the `sysctl` binary: `sysctl -n NAME` reads and `sysctl -w NAME=V`
 * writes a table of knobs. Unknown knobs fail as on a kernel without them; read-only knobs
 * accept the write with exit 0 and keep their value, as procps does on a read-only /proc.
 */
import type { CommandRunner } from "../../lib/exec/mod.ts";

/** The fake: a CommandRunner plus its knobs. */
export interface FakeSysctl {
  readonly run: CommandRunner;
  /** Knob values by dotted name. */
  readonly values: Map<string, string>;
  /** Knobs whose writes are silently ignored. */
  readonly readOnly: Set<string>;
}

/** Creates the fake with `values` as the kernel's knobs. */
export function createFakeSysctl(values: Record<string, string | number> = {}): FakeSysctl {
  const knobs = new Map(Object.entries(values).map(([k, v]) => [k, String(v)]));
  const readOnly = new Set<string>();
  const missing = (name: string) => ({
    code: 255,
    stdout: "",
    stderr: `sysctl: cannot stat /proc/sys/${
      name.replaceAll(".", "/")
    }: No such file or directory\n`,
  });
  const run: CommandRunner = ({ args }) => {
    const [flag, arg = ""] = args;
    if (flag === "-n") {
      const v = knobs.get(arg);
      return Promise.resolve(
        v === undefined ? missing(arg) : { code: 0, stdout: `${v}\n`, stderr: "" },
      );
    }
    if (flag === "-w") {
      const [name = "", value = ""] = arg.split("=");
      if (!knobs.has(name)) return Promise.resolve(missing(name));
      if (!readOnly.has(name)) knobs.set(name, value);
      return Promise.resolve({ code: 0, stdout: `${name} = ${value}\n`, stderr: "" });
    }
    return Promise.resolve({ code: 1, stdout: "", stderr: `sysctl: unknown option "${flag}"\n` });
  };
  return { run, values: knobs, readOnly };
}
