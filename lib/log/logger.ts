/** A klog-like leveled logger: text by default, JSON with --logging-format json. */

/** Structured key/value pairs attached to a log line. */
export type LogFields = Readonly<Record<string, unknown>>;

/** The logging interface every module receives through its options. */
export interface Logger {
  /** Always printed. */
  info(msg: string, fields?: LogFields): void;
  /** Always printed, marked as a warning. */
  warn(msg: string, fields?: LogFields): void;
  /** Always printed, marked as an error. */
  error(msg: string, fields?: LogFields): void;
  /** Printed only when the configured verbosity is at least `level` (klog's V(level)). */
  debug(level: number, msg: string, fields?: LogFields): void;
}

/** Output format of the logger. */
export type LogFormat = "text" | "json";

/** Options for createLogger. */
export interface LoggerOptions {
  readonly format?: LogFormat;
  readonly verbosity?: number;
  /** Where lines go; defaults to stderr. */
  readonly write?: (line: string) => void;
  readonly now?: () => Date;
}

const encoder = new TextEncoder();

function defaultWrite(line: string): void {
  Deno.stderr.writeSync(encoder.encode(line + "\n"));
}

function formatValue(v: unknown): string {
  if (typeof v === "string") return JSON.stringify(v);
  if (v instanceof Error) return JSON.stringify(v.message);
  return JSON.stringify(v) ?? String(v);
}

function pad(n: number, width = 2): string {
  return String(n).padStart(width, "0");
}

/** klog header: `I1123 09:31:18.123456`. */
function klogHeader(severity: string, d: Date): string {
  return `${severity}${pad(d.getUTCMonth() + 1)}${pad(d.getUTCDate())} ${pad(d.getUTCHours())}:` +
    `${pad(d.getUTCMinutes())}:${pad(d.getUTCSeconds())}.${pad(d.getUTCMilliseconds(), 3)}000`;
}

/** Creates a logger writing klog-style text or JSON lines. */
export function createLogger(options: LoggerOptions = {}): Logger {
  const format = options.format ?? "text";
  const verbosity = options.verbosity ?? 0;
  const write = options.write ?? defaultWrite;
  const now = options.now ?? (() => new Date());

  const emit = (severity: "I" | "W" | "E", v: number, msg: string, fields?: LogFields) => {
    const d = now();
    if (format === "json") {
      const rec: Record<string, unknown> = { ts: d.getTime() / 1000, v, msg };
      for (const [k, val] of Object.entries(fields ?? {})) {
        rec[k] = val instanceof Error ? val.message : val;
      }
      if (severity !== "I") rec.level = severity === "W" ? "warning" : "error";
      write(JSON.stringify(rec));
      return;
    }
    const kv = Object.entries(fields ?? {}).map(([k, val]) => ` ${k}=${formatValue(val)}`).join("");
    write(`${klogHeader(severity, d)} ${JSON.stringify(msg)}${kv}`);
  };

  return {
    info: (msg, fields) => emit("I", 0, msg, fields),
    warn: (msg, fields) => emit("W", 0, msg, fields),
    error: (msg, fields) => emit("E", 0, msg, fields),
    debug: (level, msg, fields) => {
      if (verbosity >= level) emit("I", level, msg, fields);
    },
  };
}

/** A logger that drops everything; for tests that do not look at logs. */
export const silentLogger: Logger = {
  info: () => {},
  warn: () => {},
  error: () => {},
  debug: () => {},
};

/** A logger that keeps lines in memory; for tests that assert on what was logged. */
export function createMemoryLogger(): Logger & { readonly lines: string[] } {
  const lines: string[] = [];
  const inner = createLogger({ verbosity: 10, write: (l) => lines.push(l) });
  return Object.assign(inner, { lines });
}
