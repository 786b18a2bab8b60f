/** A command runner for tests that runs each command inside a network namespace. */
import { type CommandRunner, denoCommandRunner } from "../../lib/exec/mod.ts";

/** Runs every command as `ip netns exec <ns> <cmd> <args>`, with the real runner. */
export function netnsExecRunner(ns: string): CommandRunner {
  return (input) =>
    denoCommandRunner({
      ...input,
      cmd: "ip",
      args: ["netns", "exec", ns, input.cmd, ...input.args],
    });
}
