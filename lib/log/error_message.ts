/** Turning thrown values into text for log fields and wrapped error messages. */

/** The message of a thrown value (an Error's message, else the value as a string). */
export function errorMessage(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
