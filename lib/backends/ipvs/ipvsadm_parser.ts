/**
 * Reads what the kernel holds from ipvsadm: `ipvsadm -Sn` (save format, no connection
 * counts) and `ipvsadm -Ln` (list format, with ActiveConn/InActConn for graceful
 * termination). Firewall-mark services have no address and are reported apart: never ours.
 */
import { canonicalIP } from "../../net/mod.ts";
import type { Protocol } from "../../proxy/mod.ts";
import {
  type IpvsTable,
  type RealServer,
  realServerKey,
  type VirtualServer,
  virtualServerKey,
  type VirtualServerState,
} from "./virtual_server.ts";

/** What one listing holds: the address-based virtual servers and how many fwmark ones. */
export interface IpvsListing {
  readonly table: IpvsTable;
  readonly fwmarkServices: number;
}

/** Splits `1.2.3.4:80` or `[fd00::1]:80` into a canonical IP and a port, or null. */
export function splitHostPort(text: string): { address: string; port: number } | null {
  const m = /^\[([^\]]+)\]:(\d+)$/.exec(text) ?? /^([^:\[\]]+):(\d+)$/.exec(text);
  if (m === null || m[1] === undefined || m[2] === undefined) return null;
  const address = canonicalIP(m[1]);
  const port = Number(m[2]);
  if (address === null || port > 65535) return null;
  return { address, port };
}

const SAVE_PROTOCOL: Readonly<Record<string, Protocol>> = {
  "-t": "TCP",
  "--tcp-service": "TCP",
  "-u": "UDP",
  "--udp-service": "UDP",
  "--sctp-service": "SCTP",
};

const LIST_PROTOCOL: Readonly<Record<string, Protocol>> = { TCP: "TCP", UDP: "UDP", SCTP: "SCTP" };

class TableBuilder {
  readonly table = new Map<string, { vs: VirtualServer; realServers: Map<string, RealServer> }>();
  fwmark = 0;

  addService(vs: VirtualServer): string {
    const key = virtualServerKey(vs);
    this.table.set(key, { vs, realServers: new Map() });
    return key;
  }

  /** The real servers of a virtual server just added, to fill without a lookup per line. */
  realServersOf(vsKey: string): Map<string, RealServer> | null {
    return this.table.get(vsKey)?.realServers ?? null;
  }

  addReal(vsKey: string | null, rs: RealServer): void {
    if (vsKey === null) return;
    this.table.get(vsKey)?.realServers.set(realServerKey(rs), rs);
  }

  done(): IpvsListing {
    return {
      table: this.table as ReadonlyMap<string, VirtualServerState>,
      fwmarkServices: this.fwmark,
    };
  }
}

function invalid(what: string, line: string): SyntaxError {
  return new SyntaxError(`Invalid "ipvsadm ${what}" line "${line}": expected a service or server`);
}

/** Parses `ipvsadm -Sn` output. Throws SyntaxError naming a line it cannot read. */
export function parseIpvsadmSave(text: string): IpvsListing {
  const b = new TableBuilder();
  for (const raw of text.split("\n")) {
    const line = raw.trim();
    if (line === "") continue;
    const words = line.split(/\s+/);
    const op = words[0];
    const kind = words[1] ?? "";
    if (kind === "-f" || kind === "--fwmark-service") {
      if (op === "-A") b.fwmark++;
      continue;
    }
    const protocol = SAVE_PROTOCOL[kind];
    const hp = splitHostPort(words[2] ?? "");
    if ((op !== "-A" && op !== "-a") || protocol === undefined || hp === null) {
      throw invalid("-Sn", line);
    }
    const opt = (name: string) => {
      const i = words.indexOf(name, 3);
      return i === -1 ? undefined : words[i + 1];
    };
    if (op === "-A") {
      b.addService({
        ...hp,
        protocol,
        scheduler: opt("-s") ?? "",
        persistentTimeout: Number(opt("-p") ?? 0),
        schedFlags: (opt("-b") ?? "").split(",").filter((f) => f !== "").sort(),
      });
    } else {
      const real = splitHostPort(opt("-r") ?? "");
      if (real === null) throw invalid("-Sn", line);
      const key = virtualServerKey({ ...hp, protocol });
      b.addReal(key, { ...real, weight: Number(opt("-w") ?? 1) });
    }
  }
  return b.done();
}

/** Whether `s` is a non-empty run of ASCII digits. */
function allDigits(s: string): boolean {
  if (s.length === 0) return false;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c < 48 || c > 57) return false;
  }
  return true;
}

/**
 * splitHostPort for the common IPv4 `a.b.c.d:port` word without regular expressions, also
 * returning the word itself as the real server key when it is already canonical (no new
 * string per real server); anything else goes through splitHostPort.
 */
function hostPortWord(word: string): { address: string; port: number; key: string } | null {
  const colon = word.indexOf(":");
  if (colon > 0 && word.charCodeAt(0) !== 91 /* [ */ && word.indexOf(":", colon + 1) === -1) {
    const text = word.slice(0, colon);
    const portText = word.slice(colon + 1);
    if (!allDigits(portText)) return null;
    const address = canonicalIP(text);
    const port = Number(portText);
    if (address === null || port > 65535) return null;
    const canonical = address === text && String(port) === portText;
    return { address, port, key: canonical ? word : realServerKey({ address, port }) };
  }
  const hp = splitHostPort(word);
  return hp === null ? null : { ...hp, key: realServerKey(hp) };
}

/** A non-negative integer word, or NaN (as `Number` on a bad word, but never for "" or "1e3"). */
function intWord(word: string | undefined): number {
  return word !== undefined && allDigits(word) ? Number(word) : NaN;
}

/**
 * Parses `ipvsadm -Ln` output, connection counts included. Throws SyntaxError on a bad line.
 * Written for speed: a large node lists over 100,000 real servers on every sync.
 */
export function parseIpvsadmList(text: string): IpvsListing {
  const b = new TableBuilder();
  let current: Map<string, RealServer> | null = null;
  let pos = 0;
  while (pos < text.length) {
    let end = text.indexOf("\n", pos);
    if (end === -1) end = text.length;
    const raw = text.slice(pos, end);
    pos = end + 1;
    const line = raw.trim();
    if (line === "") continue;
    const words = line.split(/\s+/);
    const first = words[0]!;
    if (
      line.startsWith("IP Virtual Server") || line.startsWith("Prot ") ||
      line.startsWith("-> RemoteAddress")
    ) continue;
    if (first === "->") {
      const real = hostPortWord(words[1] ?? "");
      const weight = intWord(words[3]);
      const activeConns = intWord(words[4]);
      const inactiveConns = intWord(words[5]);
      if (real === null || Number.isNaN(weight + activeConns + inactiveConns)) {
        throw invalid("-Ln", line);
      }
      current?.set(real.key, {
        address: real.address,
        port: real.port,
        weight,
        activeConns,
        inactiveConns,
      });
      continue;
    }
    if (first === "FWM") {
      b.fwmark++;
      current = null;
      continue;
    }
    const protocol = LIST_PROTOCOL[first];
    const hp = splitHostPort(words[1] ?? "");
    if (protocol === undefined || hp === null || words[2] === undefined) throw invalid("-Ln", line);
    let schedFlags: string[] = [];
    const p = words.indexOf("persistent");
    const flagWord = words.find((w) => w.startsWith("(") && w.endsWith(")"));
    if (flagWord !== undefined) schedFlags = flagWord.slice(1, -1).split(",").sort();
    const key = b.addService({
      ...hp,
      protocol,
      scheduler: words[2],
      persistentTimeout: p === -1 ? 0 : Number(words[p + 1] ?? 0),
      schedFlags,
    });
    current = b.realServersOf(key);
  }
  return b.done();
}
