/** The command seam: every netadmin binary is run through one function of this shape. */

/** What to run. */
export interface CommandInput {
  readonly cmd: string;
  readonly args: readonly string[];
  /** Written to the command's stdin, then closed. */
  readonly stdin?: string;
  /**
   * Used instead of `stdin` for large inputs: the pieces are written one after the other, so the
   * input is never held as one big string next to one big byte buffer. All pieces are made
   * before the command starts: iptables-legacy-restore `-w N` arms an alarm when it takes the
   * xtables lock and never cancels it, so a read of stdin still waiting N seconds later is cut
   * short and the restore fails ("COMMIT expected"); the input must be ready when it reads.
   * Must be iterable more than once (recorders and fakes re-read it).
   */
  readonly stdinChunks?: Iterable<string>;
  /**
   * Used instead of the others for input made while the command runs: each piece is written
   * as it comes, so the command works on the first pieces while later ones are still being
   * made (a full iptables sync writes its rules while its reads of the tables finish). The
   * producer must not stall longer than the command tolerates (see stdinChunks on `-w N`). When
   * it throws, stdin is closed mid-input, the command's output is awaited and the producer's
   * error is thrown. Iterable once: read it with stdinText, which consumes it.
   */
  readonly stdinStream?: AsyncIterable<string>;
  /**
   * Lets the caller stop reading early: called with each line of stdout as it arrives; once it
   * returns true the runner stops reading, ends the command and returns the lines read so far
   * (that one included) with code 0. A runner may ignore it and return the whole output.
   */
  readonly stdoutUntil?: (line: string) => boolean;
  /**
   * Lets the caller read a large output without holding it: called with each line of stdout
   * (before stdoutUntil); lines it rejects are read but left out of the returned stdout. A
   * runner may ignore it and return every line.
   */
  readonly stdoutKeep?: (line: string) => boolean;
}

/**
 * The whole stdin of an input (`stdin`, `stdinChunks` joined, or `stdinStream` consumed);
 * undefined when it has none.
 */
export async function stdinText(input: CommandInput): Promise<string | undefined> {
  if (input.stdinStream !== undefined) {
    let text = "";
    for await (const chunk of input.stdinStream) text += chunk;
    return text;
  }
  if (input.stdinChunks === undefined) return input.stdin;
  let text = "";
  for (const chunk of input.stdinChunks) text += chunk;
  return text;
}

/**
 * The input with its stdin read into one string (consuming a stream), for fakes and recorders
 * that keep what a command was given.
 */
export async function withStdinText(input: CommandInput): Promise<CommandInput> {
  const stdin = await stdinText(input);
  return stdin === undefined
    ? { cmd: input.cmd, args: input.args }
    : { cmd: input.cmd, args: input.args, stdin };
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
export const denoCommandRunner: CommandRunner = async (input) => {
  const { cmd, args, stdin, stdinChunks, stdinStream } = input;
  // Chunks are all made before the command starts (see stdinChunks); they are encoded as written.
  const pieces = stdinStream ??
    (stdinChunks === undefined ? (stdin === undefined ? undefined : [stdin]) : [...stdinChunks]);
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
  const producerFailed = pieces === undefined ? undefined : await feed(child, pieces);
  const { stdoutUntil, stdoutKeep } = input;
  const out = stdoutUntil !== undefined || stdoutKeep !== undefined
    ? await readLines(child, stdoutUntil ?? (() => false), stdoutKeep)
    : await child.output().then((o) => ({
      code: o.code,
      stdout: decoder.decode(o.stdout),
      stderr: decoder.decode(o.stderr),
    }));
  if (producerFailed !== undefined) throw producerFailed.err;
  return out;
};

/** Size of the buffer stdin is encoded into, one part at a time, before it is written. */
const FEED_BUFFER_BYTES = 64 * 1024;

/**
 * Writes every piece to the child's stdin and closes it. A command that exits before reading
 * all input is not an error here (its exit code tells the story); a failing producer is
 * returned, after stdin is closed so the command sees its input end early.
 *
 * Pieces are encoded into one buffer, reused once each write is done: a byte copy per piece
 * would outlive its write until V8's next full collection, since a slow reader keeps it alive
 * long enough to reach the old generation, and a large first restore would pile them up.
 */
async function feed(
  child: Deno.ChildProcess,
  pieces: Iterable<string> | AsyncIterable<string>,
): Promise<{ err: unknown } | undefined> {
  const writer = child.stdin.getWriter();
  const buffer = new Uint8Array(FEED_BUFFER_BYTES);
  try {
    pieces: for await (const piece of pieces) {
      for (let rest = piece; rest !== "";) {
        const { read, written } = encoder.encodeInto(rest, buffer);
        const ok = await writer.write(buffer.subarray(0, written)).then(() => true, () => false);
        if (!ok) break pieces;
        rest = rest.slice(read);
      }
    }
  } catch (err) {
    await writer.close().catch(() => {});
    return { err };
  }
  await writer.close().catch(() => {});
  return undefined;
}

/**
 * Reads stdout line by line until `stop` accepts one, then ends the command (its stdout is
 * closed; SIGKILL if it lingers); if none does, the command's own exit code is returned. With
 * `keep`, only the lines it accepts are returned; without, every line read.
 */
async function readLines(
  child: Deno.ChildProcess,
  stop: (line: string) => boolean,
  keep: ((line: string) => boolean) | undefined,
): Promise<CommandOutput> {
  const stderr = new Response(child.stderr).text();
  const reader = child.stdout.pipeThrough(new TextDecoderStream()).getReader();
  // Kept lines are joined once at the end: appended one by one they made a rope of two small
  // objects per line that also kept every piece of output they were cut from alive.
  const kept: string[] = [];
  let stdout = "";
  let pending = "";
  let stopped = false;
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    pending += value;
    let start = 0;
    for (let nl = pending.indexOf("\n"); nl !== -1; nl = pending.indexOf("\n", start)) {
      const line = pending.slice(start, nl);
      if (keep?.(line) === true) kept.push(line);
      start = nl + 1;
      if (stop(line)) {
        stopped = true;
        break;
      }
    }
    // Without `keep`, the lines read are appended as one slice per chunk.
    if (keep === undefined) stdout += pending.slice(0, start);
    pending = pending.slice(start);
    if (stopped) break;
  }
  if (kept.length > 0) stdout = kept.join("\n") + "\n";
  kept.length = 0;
  if (stopped) {
    // Ended at once rather than left to die of a closed pipe: iptables-legacy-save fetches and
    // formats a whole table before its next write fails, a noticeable share of a core.
    await reader.cancel().catch(() => {});
    end(child, "SIGTERM");
    const lingering = setTimeout(() => end(child, "SIGKILL"), 1_000);
    await child.status;
    clearTimeout(lingering);
    return { code: 0, stdout, stderr: await stderr };
  }
  const status = await child.status;
  const last = keep === undefined || (pending !== "" && keep(pending)) ? pending : "";
  return { code: status.code, stdout: stdout + last, stderr: await stderr };
}

/** Sends `signal` to a child that may already have exited. */
function end(child: Deno.ChildProcess, signal: Deno.Signal): void {
  try {
    child.kill(signal);
  } catch {
    // it already exited
  }
}

/** Runs a command and throws CommandError when it exits non-zero. */
export async function runChecked(runner: CommandRunner, input: CommandInput): Promise<string> {
  const out = await runner(input);
  if (out.code !== 0) throw new CommandError(input.cmd, input.args, out.code, out.stderr);
  return out.stdout;
}
