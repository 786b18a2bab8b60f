/** Public face of lib/exec: the command-runner seam over Deno.Command. */
export {
  COMMAND_NOT_FOUND,
  CommandError,
  type CommandInput,
  type CommandOutput,
  type CommandRunner,
  denoCommandRunner,
  runChecked,
  stdinText,
  withStdinText,
} from "./runner.ts";
export { ensureSysctl, readSysctl, type SysctlOutcome } from "./sysctl.ts";
