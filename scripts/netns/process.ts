/** Long-running processes inside a namespace, with their output kept for failure reports. */

import { scaledMs } from "./time_scale.ts";
const MAX_LOG_CHARS = 1_000_000;

/** A process started with `ip netns exec`; killed by the topology's `destroy()`. */
export interface SpawnedProcess {
  /** Short label used in logs, e.g. "echo pod-a" or "proxy". */
  readonly label: string;
  readonly pid: number;
  /** Resolves when the process exits. */
  readonly status: Promise<Deno.CommandStatus>;
  /** Everything written so far to stdout and stderr, interleaved (the last ~1 MB). */
  output(): string;
  /** Resolves once the output matches; rejects (with the output) on timeout or exit. */
  waitForOutput(pattern: RegExp | string, timeoutMs?: number): Promise<void>;
  /** SIGTERM, then SIGKILL after `graceMs`; resolves once it has exited. */
  kill(graceMs?: number): Promise<Deno.CommandStatus>;
}

/** How to start a process. */
export interface SpawnOptions {
  readonly label?: string;
  readonly cwd?: string;
  readonly env?: Readonly<Record<string, string>>;
}

/** Starts `cmd args` inside namespace `ns`, capturing its output. */
export function spawnInNamespace(
  ns: string,
  cmd: string,
  args: readonly string[],
  opts: SpawnOptions = {},
): SpawnedProcess {
  const child = new Deno.Command("ip", {
    args: ["netns", "exec", ns, cmd, ...args],
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
    ...(opts.cwd !== undefined ? { cwd: opts.cwd } : {}),
    ...(opts.env !== undefined ? { env: { ...opts.env } } : {}),
  }).spawn();
  const label = opts.label ?? `${cmd} in ${ns}`;
  let log = "";
  let exited = false;
  const listeners = new Set<() => void>();
  const notify = () => listeners.forEach((l) => l());
  const pump = async (stream: ReadableStream<Uint8Array>) => {
    const decoder = new TextDecoder();
    for await (const chunk of stream) {
      log += decoder.decode(chunk, { stream: true });
      if (log.length > MAX_LOG_CHARS) log = log.slice(-MAX_LOG_CHARS);
      notify();
    }
  };
  const pumps = Promise.all([pump(child.stdout), pump(child.stderr)]).catch(() => {});
  const status = (async () => {
    const s = await child.status;
    await pumps;
    exited = true;
    notify();
    return s;
  })();

  const waitForOutput = (pattern: RegExp | string, timeoutMs = scaledMs(10_000)) =>
    new Promise<void>((resolve, reject) => {
      const matches = () => typeof pattern === "string" ? log.includes(pattern) : pattern.test(log);
      const done = (err?: Error) => {
        clearTimeout(timer);
        listeners.delete(check);
        if (err) reject(err);
        else resolve();
      };
      const check = () => {
        if (matches()) done();
        else if (exited) {
          done(new Error(`Process "${label}" exited before printing ${pattern}; output:\n${log}`));
        }
      };
      const timer = setTimeout(
        () =>
          done(
            new Error(
              `Process "${label}" did not print ${pattern} in ${timeoutMs} ms; output:\n${log}`,
            ),
          ),
        timeoutMs,
      );
      listeners.add(check);
      check();
    });

  const kill = async (graceMs = 2000) => {
    const signal = (sig: Deno.Signal) => {
      try {
        child.kill(sig);
      } catch {
        // Already exited.
      }
    };
    if (!exited) signal("SIGTERM");
    const timer = setTimeout(() => signal("SIGKILL"), graceMs);
    try {
      return await status;
    } finally {
      clearTimeout(timer);
    }
  };

  return { label, pid: child.pid, status, output: () => log, waitForOutput, kill };
}
