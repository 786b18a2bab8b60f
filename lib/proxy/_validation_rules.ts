/**
 * Field-level checks shared by the Service, EndpointSlice and Node validators. Objects from the
 * API server or a manifest file are untrusted: every field is type-checked at runtime, because a
 * YAML file can put a string where the generated types promise a number.
 */

/** The outcome of validating one untrusted object: the clean value, or why it was rejected. */
export type Validation<T> = { readonly ok: true; readonly value: T } | {
  readonly ok: false;
  readonly reason: string;
};

/**
 * Thrown by the field readers below and caught by each validator, which turns it into a
 * rejection reason; it never escapes lib/proxy.
 */
export class InvalidFieldError extends Error {
  constructor(readonly field: string, readonly problem: string) {
    super(`${field} ${problem}`);
    this.name = "InvalidFieldError";
  }
}

const MAX_QUOTED = 80;

/** Quotes an untrusted value for an error message, escaped and cut short so logs stay readable. */
export function quoteValue(value: unknown): string {
  let text: string;
  if (typeof value === "string") text = value;
  else if (value === undefined) text = "";
  else if (value instanceof Date) text = value.toISOString();
  else text = JSON.stringify(value) ?? String(value);
  if (text.length > MAX_QUOTED) text = `${text.slice(0, MAX_QUOTED)}...`;
  return JSON.stringify(text);
}

/** Rejects `field` holding `value`; `problem` says what was expected. */
export function invalid(field: string, value: unknown, problem: string): never {
  throw new InvalidFieldError(field, `${quoteValue(value)} ${problem}`);
}

/** Runs a validator body, turning a field error into a rejection prefixed with the object. */
export function runValidation<T>(subject: () => string, body: () => T): Validation<T> {
  try {
    return { ok: true, value: body() };
  } catch (err) {
    if (err instanceof InvalidFieldError) {
      return { ok: false, reason: `${subject()}: ${err.message}` };
    }
    throw err;
  }
}

const DNS1123_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
const DNS1123_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;
const LABEL_VALUE = /^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$/;

/** A DNS-1123 label (namespaces, Service names, port names): at most 63 of [a-z0-9-]. */
export function isDNS1123Label(s: string): boolean {
  return s.length <= 63 && DNS1123_LABEL.test(s);
}

/** A DNS-1123 subdomain (EndpointSlice and Node names): dot-separated labels, at most 253. */
export function isDNS1123Subdomain(s: string): boolean {
  return s.length <= 253 && DNS1123_SUBDOMAIN.test(s);
}

/** A label value (zones): empty, or at most 63 alphanumerics with `-_.` inside. */
export function isLabelValue(s: string): boolean {
  return s === "" || (s.length <= 63 && LABEL_VALUE.test(s));
}

/** What optRecord reads an absent object as: one shared empty record, not one per call. */
const NO_FIELDS: Readonly<Record<string, unknown>> = Object.freeze({});

/** Reads an optional string field; null counts as absent. */
export function optString(value: unknown, field: string): string | undefined {
  if (value === undefined || value === null) return undefined;
  if (typeof value !== "string") invalid(field, value, "is not a string");
  return value;
}

/** Reads an optional boolean field; null counts as absent. */
export function optBool(value: unknown, field: string): boolean | undefined {
  if (value === undefined || value === null) return undefined;
  if (typeof value !== "boolean") invalid(field, value, "is not a boolean");
  return value;
}

/** Reads an optional list field; absent or null is an empty list. */
export function optArray(value: unknown, field: string): readonly unknown[] {
  if (value === undefined || value === null) return [];
  if (!Array.isArray(value)) invalid(field, value, "is not a list");
  return value;
}

/** Reads an optional object field; absent or null is an empty object. */
export function optRecord(value: unknown, field: string): Readonly<Record<string, unknown>> {
  if (value === undefined || value === null) return NO_FIELDS;
  if (typeof value !== "object" || Array.isArray(value)) invalid(field, value, "is not an object");
  return value as Record<string, unknown>;
}

/** Reads a map of strings (labels, annotations); absent is empty. */
export function optStringMap(value: unknown, field: string): Readonly<Record<string, string>> {
  const rec = optRecord(value, field);
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(rec)) {
    if (typeof v !== "string") invalid(`${field}[${JSON.stringify(k)}]`, v, "is not a string");
    out[k] = v;
  }
  return out;
}

/** Reads a required port number: an integer from 1 to 65535. */
export function portNumber(value: unknown, field: string): number {
  if (typeof value !== "number" || !Number.isInteger(value) || value < 1 || value > 65535) {
    invalid(field, value, "is not a valid port: expected an integer from 1 to 65535");
  }
  return value;
}

/** Reads an optional port number; absent, null and 0 (upstream's "not set") give 0. */
export function optPortNumber(value: unknown, field: string): number {
  if (value === undefined || value === null || value === 0) return 0;
  return portNumber(value, field);
}

/** Reads a required DNS-1123 label (metadata.namespace, Service names). */
export function dnsLabel(value: unknown, field: string): string {
  const s = optString(value, field);
  if (s === undefined || !isDNS1123Label(s)) {
    invalid(field, value, "is not a valid DNS-1123 label: expected at most 63 of [a-z0-9-]");
  }
  return s;
}

/** Reads a required DNS-1123 subdomain (EndpointSlice and Node names). */
export function dnsSubdomain(value: unknown, field: string): string {
  const s = optString(value, field);
  if (s === undefined || !isDNS1123Subdomain(s)) {
    invalid(field, value, "is not a valid DNS-1123 subdomain: expected at most 253 of [a-z0-9-.]");
  }
  return s;
}

/** A best-effort `ns/name` for reporting an object whose metadata may itself be invalid. */
export function rawObjectKey(metadata: unknown): string {
  const meta = (typeof metadata === "object" && metadata !== null ? metadata : {}) as Record<
    string,
    unknown
  >;
  const ns = typeof meta.namespace === "string" ? meta.namespace : "";
  const name = typeof meta.name === "string" ? meta.name : "";
  return ns === "" ? name : `${ns}/${name}`;
}
