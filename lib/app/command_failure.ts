/** The error a command reports to main.ts, which exits with its code. */

/** A failure the caller reports and exits with `code` for (1 bad input, 2 runtime). */
export class CommandFailure extends Error {
  /** `code` is the process exit code. */
  constructor(message: string, readonly code: number) {
    super(message);
    this.name = "CommandFailure";
  }
}
