/**
 * Command input made of lines, as one flat string. `lines.join("\n") + "\n"` makes V8 keep a
 * rope of the joined text and the last newline, which it copies into a new flat string once
 * the input is encoded for the command's stdin: twice the input's memory for a while, the whole
 * input's worth of garbage each time.
 */

/** `lines`, each followed by "\n", joined flat; "" for no lines. `lines` is left as it was. */
export function linesText(lines: string[]): string {
  if (lines.length === 0) return "";
  lines.push("");
  try {
    return lines.join("\n");
  } finally {
    lines.pop();
  }
}
