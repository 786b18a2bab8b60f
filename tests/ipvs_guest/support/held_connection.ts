/**
 * A TCP connection held open from a namespace across proxy changes (held_client.ts run under
 * `ip netns exec`, driven on its stdin): who answered, data both ways on demand, and an RST close.
 */
import { scaledMs, type Topology } from "../../../scripts/netns/mod.ts";

const CLIENT = decodeURIComponent(new URL("./held_client.ts", import.meta.url).pathname);
const encoder = new TextEncoder();

/** One held connection; `close()` it in a `finally`. */
export class HeldConnection {
  readonly #child: Deno.ChildProcess;
  readonly #stdin: WritableStreamDefaultWriter<Uint8Array>;
  readonly #lines: AsyncIterator<string>;
  #log = "";

  private constructor(child: Deno.ChildProcess, readonly label: string) {
    this.#child = child;
    this.#stdin = child.stdin.getWriter();
    this.#lines = child.stdout.pipeThrough(new TextDecoderStream()).pipeThrough(splitLines())
      [Symbol.asyncIterator]();
  }

  /** Connects from namespace `from` to `to` (`ip:port`); resolves with the pod that greeted. */
  static async open(topo: Topology, from: string, to: string): Promise<[HeldConnection, string]> {
    const child = new Deno.Command("ip", {
      args: [
        "netns",
        "exec",
        topo.nsName(from),
        Deno.execPath(),
        "run",
        "--no-config",
        "--allow-net",
        CLIENT,
        to,
      ],
      stdin: "piped",
      stdout: "piped",
      stderr: "inherit",
    }).spawn();
    const conn = new HeldConnection(child, `${from} -> ${to}`);
    const hello = await conn.#next("hello ", scaledMs(20_000));
    return [conn, hello.split(" ")[0] ?? ""];
  }

  /** Sends `text` and resolves with the answer line (`<pod> <text>`). */
  async send(text: string): Promise<string> {
    await this.#stdin.write(encoder.encode(`send ${text}\n`));
    return await this.#next("reply ", scaledMs(10_000));
  }

  /** Ends the connection with an RST (unread data on close) and waits for the client to exit. */
  async reset(): Promise<void> {
    await this.#stdin.write(encoder.encode("reset\n"));
    await this.#next("reset", scaledMs(10_000));
    await this.#child.status;
  }

  /** Kills the client if it still runs; safe to call twice. */
  async close(): Promise<void> {
    try {
      this.#child.kill("SIGKILL");
    } catch {
      // Already exited.
    }
    await this.#child.status;
  }

  /** What the client printed so far, for failure messages. */
  get log(): string {
    return this.#log;
  }

  async #next(prefix: string, timeoutMs: number): Promise<string> {
    let timer: ReturnType<typeof setTimeout> | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(
        () =>
          reject(
            new Error(
              `Held connection ${this.label}: no "${prefix}" in ${timeoutMs} ms; output:\n${this.#log}`,
            ),
          ),
        timeoutMs,
      );
    });
    try {
      const r = await Promise.race([this.#lines.next(), timeout]);
      if (r.done) throw new Error(`Held connection ${this.label} ended; output:\n${this.#log}`);
      this.#log += r.value + "\n";
      if (!r.value.startsWith(prefix)) {
        throw new Error(`Held connection ${this.label}: expected "${prefix}…", got "${r.value}"`);
      }
      return r.value.slice(prefix.length);
    } finally {
      clearTimeout(timer);
    }
  }
}

function splitLines(): TransformStream<string, string> {
  let pending = "";
  return new TransformStream({
    transform(chunk, controller) {
      pending += chunk;
      let nl: number;
      while ((nl = pending.indexOf("\n")) >= 0) {
        controller.enqueue(pending.slice(0, nl));
        pending = pending.slice(nl + 1);
      }
    },
  });
}
