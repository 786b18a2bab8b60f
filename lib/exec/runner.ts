/** The command seam: every netadmin binary is run through one function of this shape. */

/** What to run. */
export interface CommandInput {
  readonly cmd: string;
  readonly args: readonly string[];
  /** Written to the command's stdin, then closed. */
  readonly stdin?: string;
  /**
   * Used instead of `stdin` for large inputs: each piece is encoded on its own, so the input is
   * never held as one big string next to one big byte buffer. All pieces are encoded before the
   * command starts: iptables-legacy-restore `-w N` arms an alarm when it takes the xtables lock
   * and never cancels it, so a read of stdin still waiting N seconds later is cut short and the
   * restore fails ("COMMIT expected"); the input must be ready when it reads. Must be iterable
   * more than once (recorders and fakes re-read it).
   */
  readonly stdinChunks?: Iterable<string>;
}

/** The whole stdin of an input (`stdin`, or `stdinChunks` joined); undefined when it has none. */
export function stdinText(input: CommandInput): string | undefined {
  if (input.stdinChunks === undefined) return input.stdin;
  let text = "";
  for (const chunk of input.stdinChunks) text += chunk;
  return text;
}

/** The exit code a missing binary yields (as a shell reports it) instead of a thrown error. */
export const COMMAND_NOT_FOUND = 127;

/** What came back. A missing binary yields COMMAND_NOT_FOUND rather than throwing. */
export interface CommandOutput {
  readonly code: number;
  readonly stdout: string;
  readonly stderr: string;
}

/** Runs one command to completion. */
export type CommandRunner = (input: CommandInput) => Promise<CommandOutput>;

/** A command exited non-zero; callers branch on `code`, never on message text. */
export class CommandError extends Error {
  /** Builds the error from the input and the failed output. */
  constructor(
    readonly cmd: string,
    readonly args: readonly string[],
    readonly code: number,
    readonly stderr: string,
  ) {
    super(`Command "${cmd} ${args.join(" ")}" exited ${code}: ${stderr.trim()}`);
    this.name = "CommandError";
  }
}

const decoder = new TextDecoder();
const encoder = new TextEncoder();

/** The real runner over Deno.Command. */
export const denoCommandRunner: CommandRunner = async ({ cmd, args, stdin, stdinChunks }) => {
  const pieces = stdinChunks === undefined
    ? (stdin === undefined ? undefined : [encoder.encode(stdin)])
    : Array.from(stdinChunks, (chunk) => encoder.encode(chunk));
  let child: Deno.ChildProcess;
  try {
    child = new Deno.Command(cmd, {
      args: [...args],
      stdin: pieces === undefined ? "null" : "piped",
      stdout: "piped",
      stderr: "piped",
    }).spawn();
  } catch (err) {
    if (err instanceof Deno.errors.NotFound) {
      return { code: COMMAND_NOT_FOUND, stdout: "", stderr: `${cmd}: command not found` };
    }
    throw err;
  }
  if (pieces !== undefined) {
    const writer = child.stdin.getWriter();
    try {
      for (const piece of pieces) await writer.write(piece);
      await writer.close();
    } catch {
      // The command exited before reading all input; its exit code tells the story.
    }
  }
  const out = await child.output();
  return { code: out.code, stdout: decoder.decode(out.stdout), stderr: decoder.decode(out.stderr) };
};

/** Runs a command and throws CommandError when it exits non-zero. */
export async function runChecked(runner: CommandRunner, input: CommandInput): Promise<string> {
  const out = await runner(input);
  if (out.code !== 0) throw new CommandError(input.cmd, input.args, out.code, out.stderr);
  return out.stdout;
}
