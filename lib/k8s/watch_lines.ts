/**
 * The watch wire format: one JSON object per line, `{"type": ..., "object": ...}`. Splitting a
 * byte stream into lines and decoding one line are pure, so a malformed line can be recognised
 * (and counted) instead of silently skipped.
 */
import type { KubeStatus } from "./_api_errors.ts";

/** The metadata fields the watch loop reads from any object. */
export interface ObjectMeta {
  readonly name?: string;
  readonly namespace?: string;
  readonly resourceVersion?: string;
}

/** Any Kubernetes object, as far as the watch loop cares. */
export interface KubeObject {
  readonly apiVersion?: string;
  readonly kind?: string;
  readonly metadata?: ObjectMeta;
}

/** One decoded watch event. */
export type WatchEvent =
  | { readonly type: "ADDED" | "MODIFIED" | "DELETED"; readonly object: KubeObject }
  | { readonly type: "BOOKMARK"; readonly object: KubeObject }
  | { readonly type: "ERROR"; readonly object: KubeStatus };

/** The result of decoding one line. */
export type DecodedLine =
  | { readonly ok: true; readonly event: WatchEvent }
  | { readonly ok: false; readonly reason: string };

const OBJECT_TYPES = new Set(["ADDED", "MODIFIED", "DELETED"]);

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

/**
 * Decodes one watch line. Object events need `metadata.name`, bookmarks need
 * `metadata.resourceVersion`; anything else is reported as malformed with a reason.
 */
export function decodeWatchLine(line: string): DecodedLine {
  let parsed: unknown;
  try {
    parsed = JSON.parse(line);
  } catch (err) {
    return { ok: false, reason: `Invalid JSON: ${(err as Error).message}` };
  }
  if (!isRecord(parsed)) return { ok: false, reason: "Expected a JSON object" };
  const { type, object } = parsed;
  if (!isRecord(object)) return { ok: false, reason: `Event "${String(type)}" has no object` };
  const meta = isRecord(object.metadata) ? object.metadata : undefined;
  if (type === "ERROR") return { ok: true, event: { type, object: object as KubeStatus } };
  if (type === "BOOKMARK") {
    if (typeof meta?.resourceVersion !== "string" || meta.resourceVersion === "") {
      return { ok: false, reason: "BOOKMARK event without metadata.resourceVersion" };
    }
    return { ok: true, event: { type, object: object as KubeObject } };
  }
  if (typeof type === "string" && OBJECT_TYPES.has(type)) {
    if (typeof meta?.name !== "string" || meta.name === "") {
      return { ok: false, reason: `${type} event without metadata.name` };
    }
    return {
      ok: true,
      event: { type: type as "ADDED" | "MODIFIED" | "DELETED", object: object as KubeObject },
    };
  }
  return { ok: false, reason: `Unknown event type "${String(type)}"` };
}

/** Longest line accepted (a runaway line without a newline must not eat all memory). */
export const MAX_LINE_BYTES = 64 * 1024 * 1024;

/**
 * Cuts a byte stream into text lines. push() returns the complete lines so far; a line longer
 * than MAX_LINE_BYTES makes push() throw a RangeError.
 */
export class LineSplitter {
  readonly #decoder = new TextDecoder();
  readonly #maxChars: number;
  #pending = "";

  constructor(maxLineBytes = MAX_LINE_BYTES) {
    this.#maxChars = maxLineBytes;
  }

  /** Adds bytes; returns the lines they complete (without the newline, blank lines dropped). */
  push(chunk: Uint8Array): string[] {
    const added = this.#decoder.decode(chunk, { stream: true });
    if (!added.includes("\n")) {
      this.#pending += added;
      if (this.#pending.length > this.#maxChars) {
        this.#pending = "";
        throw new RangeError(`Watch line longer than ${this.#maxChars} bytes`);
      }
      return [];
    }
    const parts = (this.#pending + added).split("\n");
    this.#pending = parts.pop() ?? "";
    if (this.#pending.length > this.#maxChars) {
      this.#pending = "";
      throw new RangeError(`Watch line longer than ${this.#maxChars} bytes`);
    }
    return parts.map((l) => l.replace(/\r$/, "")).filter((l) => l.trim() !== "");
  }

  /** The unterminated rest at the end of the stream, if any. */
  flush(): string[] {
    const rest = this.#pending + this.#decoder.decode();
    this.#pending = "";
    return rest.trim() === "" ? [] : [rest];
  }
}
