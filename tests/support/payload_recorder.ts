/** Records the restore input a proxier sends, for tests and benches to inspect or replay. */
import { type CommandRunner, stdinText } from "../../lib/exec/mod.ts";

/**
 * A runner that keeps the stdin of the last `*-restore` it ran, to replay it raw. A streamed
 * input is still streamed to the command, its pieces kept as they pass.
 */
export function payloadRecorder(runner: CommandRunner): {
  readonly run: CommandRunner;
  lastRestore(): string;
} {
  let last: string | undefined;
  return {
    run: async (input) => {
      if (!input.cmd.endsWith("-restore")) return await runner(input);
      const stream = input.stdinStream;
      if (stream === undefined) {
        last = await stdinText(input);
        return await runner(input);
      }
      const pieces: string[] = [];
      async function* tee(): AsyncGenerator<string> {
        for await (const piece of stream!) {
          pieces.push(piece);
          yield piece;
        }
      }
      const out = await runner({ ...input, stdinStream: tee() });
      last = pieces.join("");
      return out;
    },
    lastRestore: () => {
      if (last === undefined) throw new Error("No iptables restore has run yet");
      return last;
    },
  };
}
