/** The masquerade mark every mode writes into its rules. */

/** Formats the mark as Go's `fmt.Sprintf("%#08x", 1<<bit)` does, e.g. `0x00004000`. */
export function masqueradeMarkText(bit: number): string {
  if (!Number.isInteger(bit) || bit < 0 || bit > 31) {
    throw new RangeError(`Invalid masqueradeBit "${bit}": expected an integer from 0 to 31`);
  }
  return "0x" + (2 ** bit).toString(16).padStart(8, "0");
}
