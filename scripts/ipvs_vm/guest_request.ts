/** A command for the guest, rendered as the shell script the agent runs (pure text). */

/** What to run inside the guest. */
export interface GuestCommand {
  readonly cmd: string;
  readonly args?: readonly string[];
  /** Added to the guest's base environment. */
  readonly env?: Readonly<Record<string, string>>;
  /** Working directory inside the guest (the host's paths are the guest's paths). */
  readonly cwd?: string;
  /** Killed (exit 124) after this long; default 60 s. */
  readonly timeoutMs?: number;
  /** Written to the command's stdin. */
  readonly stdin?: string;
}

/** What came back, as from the command seam. */
export interface GuestOutput {
  readonly code: number;
  readonly stdout: string;
  readonly stderr: string;
}

/** Seconds between the timeout's SIGTERM and its SIGKILL. */
export const KILL_GRACE_SECONDS = 5;
/** The timeout of a command that names none. */
export const DEFAULT_COMMAND_TIMEOUT_MS = 60_000;

const ENV_NAME_RE = /^[A-Za-z_][A-Za-z0-9_]*$/;

/** Single-quotes a word for POSIX sh. */
export function shellQuote(word: string): string {
  if (word.includes("\0")) throw new Error(`Invalid shell word ${JSON.stringify(word)}: NUL byte`);
  return `'${word.replaceAll("'", `'\\''`)}'`;
}

/**
 * The script for one request: environment, directory, then the command under coreutils
 * `timeout` (so a hung command cannot wedge the agent). `stdinPath` is where the host put
 * the request's stdin, if it has any.
 */
export function renderRequestScript(
  command: GuestCommand,
  baseEnv: Readonly<Record<string, string>>,
  stdinPath: string | null,
): string {
  const env = { ...baseEnv, ...command.env };
  const lines = ["set -e"];
  for (const [name, value] of Object.entries(env)) {
    if (!ENV_NAME_RE.test(name)) {
      throw new Error(
        `Invalid environment variable name "${name}": expected [A-Za-z_][A-Za-z0-9_]*`,
      );
    }
    lines.push(`export ${name}=${shellQuote(value)}`);
  }
  if (command.cwd !== undefined) lines.push(`cd ${shellQuote(command.cwd)}`);
  const timeoutMs = command.timeoutMs ?? DEFAULT_COMMAND_TIMEOUT_MS;
  if (!Number.isFinite(timeoutMs) || timeoutMs <= 0) {
    throw new Error(`Invalid timeoutMs "${timeoutMs}": expected a positive number`);
  }
  const seconds = Math.max(1, Math.ceil(timeoutMs / 1000));
  const argv = [command.cmd, ...(command.args ?? [])].map(shellQuote).join(" ");
  const input = stdinPath === null ? "/dev/null" : shellQuote(stdinPath);
  lines.push(`exec timeout -k ${KILL_GRACE_SECONDS} ${seconds} ${argv} < ${input}`);
  return `${lines.join("\n")}\n`;
}
