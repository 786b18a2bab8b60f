/** Public face of lib/exec: the command-runner seam over Deno.Command. */
export * from "./runner.ts";
export * from "./sysctl.ts";
