/**
 * The words of an iptables rule as iptables-save prints it and iptables-restore reads it:
 * split at blanks, a double-quoted part (with `\"` and `\\` escapes) never split, quotes kept.
 * Pure.
 */

/** One word: runs of plain characters and quoted parts; an unclosed quote runs to the end. */
const WORD = /(?:[^\s"]+|"(?:[^"\\]|\\.)*"?)+/g;

/** Splits a rule line (or the spec after `-A CHAIN`) into words, quoted parts kept whole. */
export function ruleWords(line: string): string[] {
  return line.match(WORD) ?? [];
}

/** A word without its surrounding double quotes (escapes left as they are). */
export function unquoteWord(word: string): string {
  return word.length >= 2 && word.startsWith('"') && word.endsWith('"') ? word.slice(1, -1) : word;
}

/** A quoted word's text with its escapes resolved, a plain word as is; undefined when malformed. */
export function wordText(word: string): string | undefined {
  if (!word.includes('"')) return word;
  const m = /^"((?:[^"\\]|\\.)*)"$/.exec(word);
  return m === null ? undefined : m[1]!.replace(/\\(.)/g, "$1");
}

/** The `-j`/`-g` target of a rule spec, or null. */
export function ruleTarget(spec: string): string | null {
  const words = ruleWords(spec);
  for (let i = 0; i < words.length - 1; i++) {
    if (words[i] === "-j" || words[i] === "--jump" || words[i] === "-g" || words[i] === "--goto") {
      return words[i + 1]!;
    }
  }
  return null;
}

/** The `--comment` text of a rule spec without its quotes, or null. */
export function ruleComment(spec: string): string | null {
  const words = ruleWords(spec);
  const i = words.indexOf("--comment");
  if (i === -1 || i + 1 >= words.length) return null;
  return unquoteWord(words[i + 1]!);
}
