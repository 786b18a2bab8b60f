/**
 * Go duration strings ("30s", "1m30s", "500ms", "24h0m0s"), the format kube-proxy's flags and its
 * config file use, converted to and from milliseconds.
 */

const NS_PER_UNIT: Readonly<Record<string, bigint>> = {
  ns: 1n,
  us: 1_000n,
  "\u00b5s": 1_000n,
  "\u03bcs": 1_000n,
  ms: 1_000_000n,
  s: 1_000_000_000n,
  m: 60_000_000_000n,
  h: 3_600_000_000_000n,
};

/** Go's time.Duration is an int64 of nanoseconds; longer values are rejected as Go does. */
const MAX_NS = 9223372036854775807n;

const TERM = /^(\d*)(?:\.(\d*))?([a-zA-Z\u00b5\u03bc]+)/;

/**
 * Parses a Go duration (as time.ParseDuration accepts it) into milliseconds, possibly fractional
 * ("1us" is 0.001). Throws a plain Error naming the text when it is not a duration.
 */
export function parseDuration(text: string): number {
  const invalid = () => new Error(`Invalid duration "${text}": expected a duration such as "30s"`);
  let rest = text;
  let sign = 1;
  if (rest.startsWith("-") || rest.startsWith("+")) {
    if (rest[0] === "-") sign = -1;
    rest = rest.slice(1);
  }
  if (rest === "0") return 0;
  if (rest === "") throw invalid();
  let ns = 0n;
  while (rest !== "") {
    const m = TERM.exec(rest);
    if (!m) throw invalid();
    const [whole, intPart = "", fracPart, unit = ""] = m;
    if (intPart === "" && (fracPart === undefined || fracPart === "")) throw invalid();
    const scale = NS_PER_UNIT[unit];
    if (scale === undefined) {
      throw new Error(
        `Invalid duration "${text}": unknown unit "${unit}", expected one of ns, us, ms, s, m, h`,
      );
    }
    const frac = fracPart ?? "";
    // Integer arithmetic, truncating sub-nanosecond digits, as Go does.
    ns += BigInt(intPart || "0") * scale +
      (BigInt(frac || "0") * scale) / 10n ** BigInt(frac.length);
    if (ns > MAX_NS) throw invalid();
    rest = rest.slice(whole.length);
  }
  const ms = Number(ns / 1_000_000n) + Number(ns % 1_000_000n) / 1e6;
  return sign * ms;
}

function trimFraction(digits: string): string {
  const trimmed = digits.replace(/0+$/, "");
  return trimmed === "" ? "" : `.${trimmed}`;
}

/** `value / unit` with a trimmed decimal fraction, as Go prints sub-second durations. */
function fractional(value: bigint, unit: bigint, width: number): string {
  const whole = value / unit;
  const frac = (value % unit).toString().padStart(width, "0");
  return `${whole}${trimFraction(frac)}`;
}

/** Formats milliseconds as Go's Duration.String does: "30s", "15m0s", "24h0m0s", "500ms". */
export function formatDuration(ms: number): string {
  let ns = BigInt(Math.round(ms * 1e6));
  if (ns === 0n) return "0s";
  const sign = ns < 0n ? "-" : "";
  if (ns < 0n) ns = -ns;
  if (ns < 1000n) return `${sign}${ns}ns`;
  if (ns < 1_000_000n) return `${sign}${fractional(ns, 1000n, 3)}\u00b5s`;
  if (ns < 1_000_000_000n) return `${sign}${fractional(ns, 1_000_000n, 6)}ms`;
  const hours = ns / 3_600_000_000_000n;
  const minutes = (ns / 60_000_000_000n) % 60n;
  const seconds = fractional(ns % 60_000_000_000n, 1_000_000_000n, 9);
  if (hours > 0n) return `${sign}${hours}h${minutes}m${seconds}s`;
  if (minutes > 0n) return `${sign}${minutes}m${seconds}s`;
  return `${sign}${seconds}s`;
}
