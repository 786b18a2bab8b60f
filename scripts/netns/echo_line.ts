/** The one-line answer format shared by the echo server (writer) and the probe (reader). */

/** What an echo server says back: who answered and which client address it saw. */
export interface EchoAnswer {
  readonly name: string;
  /** `ip:port` (IPv6 in brackets) exactly as the server saw the client. */
  readonly peer: string;
}

/** The peer text for an address, unwrapping IPv4-mapped IPv6 so tests compare plain IPv4. */
export function formatPeer(hostname: string, port: number): string {
  const host = hostname.toLowerCase().startsWith("::ffff:") && hostname.includes(".")
    ? hostname.slice("::ffff:".length)
    : hostname;
  return host.includes(":") ? `[${host}]:${port}` : `${host}:${port}`;
}

/** The line an echo server writes: `<name> <peer>` and a newline. */
export function formatEchoLine(answer: EchoAnswer): string {
  return `${answer.name} ${answer.peer}\n`;
}

/** Parses an echo line; null when the text is not one (a half-read or foreign answer). */
export function parseEchoLine(text: string): EchoAnswer | null {
  const line = text.split("\n")[0]?.trim() ?? "";
  const m = /^(\S+) (\S+)$/.exec(line);
  if (!m) return null;
  return { name: m[1]!, peer: m[2]! };
}
