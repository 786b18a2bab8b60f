/**
 * A list answer's items, found in its text without decoding the whole answer at once. One
 * `JSON.parse` of a list builds every object before the first is looked at, and they all live
 * until the last has been handed on: long enough for V8 to move them to its old generation, where
 * they wait for a full collection. Split first, each item is decoded, handed on and dropped while
 * it is still young. That lowers resident memory while the lists are decoded, and under the
 * program's V8 flags it is also faster (their small young generation makes a whole-answer
 * parse copy its tree).
 *
 * An object item's `metadata.managedFields` is cut out of its text before it is decoded (what
 * stripManagedFields would drop after decoding): nothing reads it, and it is much of the text
 * (45% of a Service list, 12% of an EndpointSlice list), so decoding it costs time and garbage.
 *
 * The split keeps `JSON.parse`'s verdict otherwise: every item is decoded by it, the separators
 * between items are checked here, and the answer around the items (kind, metadata) is decoded by
 * it with the items array emptied. Of a cut managedFields value only its brackets and strings
 * are checked (they must close). An answer whose items key is written with escapes is decoded
 * whole, managedFields and all.
 */

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const COMMA = 0x2c;
const COLON = 0x3a;
const OPEN_BRACE = 0x7b;
const CLOSE_BRACE = 0x7d;
const OPEN_BRACKET = 0x5b;
const CLOSE_BRACKET = 0x5d;

/** A list answer split into its items' texts and the rest, decoded. */
export interface ListText {
  /** The answer with its top-level "items" array emptied, decoded. */
  readonly rest: Record<string, unknown>;
  /** How many items the answer has; each is decoded only when `item(i)` is called. */
  readonly count: number;
  /**
   * Decodes item `i` (0 ≤ i < count), without the managedFields its metadata had; throws
   * SyntaxError when its text is not JSON.
   */
  item(i: number): unknown;
}

/** The index of the quote closing the string that opens at `open`. */
function stringEnd(text: string, open: number): number {
  let i = open;
  for (;;) {
    i = text.indexOf('"', i + 1);
    if (i < 0) throw new SyntaxError("Unterminated string in JSON");
    let b = i - 1;
    while (text.charCodeAt(b) === BACKSLASH) b--;
    if ((i - 1 - b) % 2 === 0) return i;
  }
}

/**
 * The index just past the object or array opening at `open`, found by counting brackets
 * outside strings. Where the text is not JSON the result may be wrong, but then so is some
 * item, and decoding it throws.
 */
function compoundEnd(text: string, open: number): number {
  let depth = 0;
  for (let i = open; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === QUOTE) i = stringEnd(text, i);
    else if (c === OPEN_BRACE || c === OPEN_BRACKET) depth++;
    else if (c === CLOSE_BRACE || c === CLOSE_BRACKET) {
      if (--depth === 0) return i + 1;
    }
  }
  throw new SyntaxError("Unexpected end of JSON input");
}

function isSpace(c: number): boolean {
  return c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09;
}

/** The first index at or after `i` that is not JSON whitespace. */
function skipSpace(text: string, i: number): number {
  while (isSpace(text.charCodeAt(i))) i++;
  return i;
}

const METADATA = '"metadata"';
const MANAGED_FIELDS = '"managedFields"';

/** Whether the string from `open` to `close` (its quotes) is `quoted` and a key: a colon follows. */
function isKey(text: string, open: number, close: number, quoted: string): boolean {
  return close - open === quoted.length - 1 && text.startsWith(quoted, open) &&
    text.charCodeAt(skipSpace(text, close + 1)) === COLON;
}

/** The text of an item's managedFields member, [from, to); from is -1 when there is none. */
interface Cut {
  from: number;
  to: number;
}

/**
 * compoundEnd for an object, which hands each of its own keys to `member` (the key's quotes at
 * `open` and `close`): `member` returns where the object's scan goes on, past the member, or -1
 * when the member is an ordinary one.
 */
function objectEnd(
  text: string,
  open: number,
  cut: Cut,
  member: (text: string, open: number, close: number, cut: Cut) => number,
): number {
  let depth = 0;
  for (let i = open; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === QUOTE) {
      const close = stringEnd(text, i);
      const next = depth === 1 ? member(text, i, close, cut) : -1;
      i = next < 0 ? close : next - 1;
    } else if (c === OPEN_BRACE || c === OPEN_BRACKET) {
      if (depth === 1) i = compoundEnd(text, i) - 1;
      else depth++;
    } else if (c === CLOSE_BRACE || c === CLOSE_BRACKET) {
      if (--depth === 0) return i + 1;
    }
  }
  throw new SyntaxError("Unexpected end of JSON input");
}

/** The index of a member's value, after the key closing at `close` and its colon. */
function valueStart(text: string, close: number): number {
  return skipSpace(text, skipSpace(text, close + 1) + 1);
}

/**
 * A metadata member: the first managedFields holding an array or object is recorded in `cut`
 * with the comma joining it to a neighbour, so that the text left is still one object.
 */
function metadataMember(text: string, open: number, close: number, cut: Cut): number {
  if (cut.from >= 0 || !isKey(text, open, close, MANAGED_FIELDS)) return -1;
  const value = valueStart(text, close);
  const v = text.charCodeAt(value);
  if (v !== OPEN_BRACKET && v !== OPEN_BRACE) return -1;
  const valueEnd = compoundEnd(text, value);
  let before = open - 1;
  while (isSpace(text.charCodeAt(before))) before--;
  if (text.charCodeAt(before) === COMMA) {
    cut.from = before;
    cut.to = valueEnd;
  } else {
    const after = skipSpace(text, valueEnd);
    cut.from = open;
    cut.to = text.charCodeAt(after) === COMMA ? after + 1 : valueEnd;
  }
  return valueEnd;
}

/** An item's member: its metadata object is scanned for the managedFields cut. */
function itemMember(text: string, open: number, close: number, cut: Cut): number {
  if (!isKey(text, open, close, METADATA)) return -1;
  const value = valueStart(text, close);
  return text.charCodeAt(value) === OPEN_BRACE ? objectEnd(text, value, cut, metadataMember) : -1;
}

/**
 * Where the top-level "items" array is: its brackets and, per element, four numbers: its
 * [start, end) and its managedFields cut [from, to) (-1, -1 when there is none).
 */
interface ItemsArray {
  open: number;
  close: number;
  spans: number[];
}

/** Scans `text` for the last top-level "items" array; undefined when there is none. */
function findItems(text: string): ItemsArray | undefined {
  const stack: number[] = [];
  let found: ItemsArray | undefined;
  let current: ItemsArray | undefined;
  let lastString = "";
  let key = "";
  let elementStart = -1;
  const cut: Cut = { from: -1, to: -1 };
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (isSpace(c)) continue;
    const depth = stack.length;
    if (current !== undefined && depth === 2) {
      if (c === COMMA) {
        if (elementStart < 0) throw new SyntaxError(`Unexpected "," in JSON at position ${i}`);
        current.spans.push(elementStart, i, cut.from, cut.to);
        elementStart = -1;
        continue;
      }
      if (c === CLOSE_BRACKET) {
        // Every comma closed an element, so with none open now, any element means a trailing one.
        if (elementStart >= 0) current.spans.push(elementStart, i, cut.from, cut.to);
        else if (current.spans.length > 0) {
          throw new SyntaxError(`Unexpected "]" in JSON at position ${i}`);
        }
        current.close = i;
        found = current;
        current = undefined;
        stack.pop();
        continue;
      }
      if (elementStart < 0) {
        elementStart = i;
        cut.from = cut.to = -1;
      }
      // An item's insides matter only for where it ends and where its managedFields are:
      // JSON.parse checks the rest once the item is decoded.
      if (c === OPEN_BRACE) {
        i = objectEnd(text, i, cut, itemMember) - 1;
        continue;
      }
      if (c === OPEN_BRACKET) {
        i = compoundEnd(text, i) - 1;
        continue;
      }
    }
    if (c === QUOTE) {
      const end = stringEnd(text, i);
      if (depth === 1) lastString = text.slice(i + 1, end);
      i = end;
    } else if (c === OPEN_BRACE || c === OPEN_BRACKET) {
      if (depth === 1 && c === OPEN_BRACKET && key === "items" && stack[0] === OPEN_BRACE) {
        current = { open: i, close: -1, spans: [] };
        elementStart = -1;
      }
      stack.push(c);
    } else if (c === CLOSE_BRACE || c === CLOSE_BRACKET) {
      if (stack.pop() !== (c === CLOSE_BRACE ? OPEN_BRACE : OPEN_BRACKET)) {
        throw new SyntaxError(`Unexpected "${text[i]}" in JSON at position ${i}`);
      }
    } else if (depth === 1 && c === COLON) {
      key = lastString;
    } else if (depth === 1 && c === COMMA) {
      key = "";
    }
  }
  return found;
}

/**
 * Splits a list answer's text. Throws SyntaxError where `JSON.parse(text)` would, except that an
 * item's own error surfaces only when `item(i)` decodes it.
 */
export function splitListText(text: string): ListText {
  const items = findItems(text);
  if (items === undefined) {
    const whole = JSON.parse(text);
    const list: unknown[] = Array.isArray(whole?.items) ? whole.items : [];
    return { rest: whole, count: list.length, item: (i) => list[i] };
  }
  const rest = JSON.parse(text.slice(0, items.open + 1) + text.slice(items.close));
  const { spans } = items;
  return {
    rest,
    count: spans.length / 4,
    item: (i) => {
      const start = spans[4 * i]!;
      const end = spans[4 * i + 1]!;
      const from = spans[4 * i + 2]!;
      if (from < 0) return JSON.parse(text.slice(start, end));
      return JSON.parse(text.slice(start, from) + text.slice(spans[4 * i + 3]!, end));
    },
  };
}
