/**
 * A state-holding fake of ipvsadm, for tests that must not need root or IPVS. It holds
 * virtual servers and their real servers and understands:
 * - `ipvsadm -Sn` / `-S -n` (save format) and `-Ln` / `-L -n` (list format with connections)
 * - `ipvsadm -R` with `-A/-E/-D/-a/-e/-d` lines on stdin, applied in order. Like the real
 *   tool (restore_table), a line the kernel refuses is reported on stderr and the rest still
 *   run, the exit code being that of the last line; a line that does not parse stops it (2)
 * - the same six commands as arguments, `-C` / `--clear`, and `--set tcp tcpfin udp` (seconds,
 *   0 keeping the current value) held in `timeouts`
 * Like the kernel it refuses adding an existing service or destination, editing or deleting a
 * missing one, an unknown scheduler, and any value it cannot parse.
 */
import type { CommandInput, CommandOutput, CommandRunner } from "../../lib/exec/mod.ts";

/** One destination as the kernel holds it. */
export interface FakeRealServer {
  address: string;
  port: number;
  weight: number;
  activeConns: number;
  inactiveConns: number;
}

/** One service as the kernel holds it. */
export interface FakeVirtualServer {
  protocol: "TCP" | "UDP" | "SCTP";
  address: string;
  port: number;
  scheduler: string;
  persistent: number;
  flags: string;
  reals: Map<string, FakeRealServer>;
}

/** Options for createFakeIpvsadm. */
export interface FakeIpvsadmOptions {
  /** Schedulers the "kernel" has; default rr, wrr, lc, wlc, lblc, lblcr, dh, sh, sed, nq, mh. */
  readonly schedulers?: readonly string[];
}

/** The fake: a CommandRunner plus its state. */
export interface FakeIpvsadm {
  readonly run: CommandRunner;
  readonly calls: CommandInput[];
  /** Services keyed `PROTO addr:port` (IPv6 bracketed), in creation order. */
  readonly services: Map<string, FakeVirtualServer>;
  /** The connection timeouts in seconds, as `ipvsadm -L --timeout` shows them. */
  readonly timeouts: { tcp: number; tcpfin: number; udp: number };
  /** Sets a destination's connection counts, as traffic would. */
  setConnections(service: string, real: string, active: number, inactive: number): void;
  /** Fails every later `-R` whose input contains `needle` (null to stop). */
  failRestoreContaining(needle: string | null): void;
}

const ok = (stdout = ""): CommandOutput => ({ code: 0, stdout, stderr: "" });
const fail = (stderr: string): CommandOutput => ({ code: 2, stdout: "", stderr });

const V4 = /^(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})$/;

function parseEndpoint(text: string | undefined): { address: string; port: number } | null {
  if (text === undefined) return null;
  const m = /^\[([0-9a-f:]+)\]:(\d{1,5})$/.exec(text) ?? /^([0-9.]+):(\d{1,5})$/.exec(text);
  if (m === null) return null;
  const [, address, port] = m as unknown as [string, string, string];
  if (!address.includes(":")) {
    const v4 = V4.exec(address);
    if (v4 === null || v4.slice(1).some((o) => Number(o) > 255)) return null;
  } else if (!address.includes("::") && address.split(":").length !== 8) {
    return null;
  }
  const p = Number(port);
  return p <= 65535 ? { address, port: p } : null;
}

function hostPort(address: string, port: number): string {
  return address.includes(":") ? `[${address}]:${port}` : `${address}:${port}`;
}

const PROTOCOLS: Readonly<Record<string, "TCP" | "UDP" | "SCTP">> = {
  "-t": "TCP",
  "--tcp-service": "TCP",
  "-u": "UDP",
  "--udp-service": "UDP",
  "--sctp-service": "SCTP",
};

const SAVE_FLAG = { TCP: "-t", UDP: "-u", SCTP: "--sctp-service" } as const;

/** Creates an empty fake. */
export function createFakeIpvsadm(options: FakeIpvsadmOptions = {}): FakeIpvsadm {
  const schedulers = new Set(
    options.schedulers ??
      ["rr", "wrr", "lc", "wlc", "lblc", "lblcr", "dh", "sh", "sed", "nq", "mh"],
  );
  const calls: CommandInput[] = [];
  const services = new Map<string, FakeVirtualServer>();
  // The kernel defaults (ip_vs_proto_tcp/udp).
  const timeouts = { tcp: 900, tcpfin: 120, udp: 300 };
  let failNeedle: string | null = null;

  /** Applies one command; returns an error (syntax: the line did not parse) or null. */
  const apply = (words: readonly string[]): { syntax: boolean; msg: string } | null => {
    const err = applyOne(words);
    if (err === null) return null;
    return { syntax: err.startsWith("Illegal"), msg: err };
  };

  const applyOne = (words: readonly string[]): string | null => {
    const [op, kind, target, ...rest] = words;
    const protocol = PROTOCOLS[kind ?? ""];
    const svc = parseEndpoint(target);
    if (op === undefined || protocol === undefined || svc === null) {
      return `Illegal command "${words.join(" ")}"`;
    }
    const opts = new Map<string, string>();
    for (let i = 0; i < rest.length; i++) {
      const w = rest[i]!;
      if (["-m", "-g", "-i"].includes(w)) continue;
      const v = rest[i + 1];
      if (!["-s", "-p", "-b", "-r", "-w"].includes(w) || v === undefined) {
        return `Illegal option "${w}"`;
      }
      opts.set(w, v);
      i++;
    }
    const key = `${protocol} ${hostPort(svc.address, svc.port)}`;
    const existing = services.get(key);
    const num = (name: string, dflt: number, max: number): number | null => {
      const t = opts.get(name);
      if (t === undefined) return dflt;
      return /^\d+$/.test(t) && Number(t) <= max ? Number(t) : null;
    };
    switch (op) {
      case "-A":
      case "-E": {
        if (op === "-A" && existing) return "Service already exists";
        if (op === "-E" && !existing) return "No such service";
        const scheduler = opts.get("-s") ?? "wlc";
        if (!schedulers.has(scheduler)) return `Scheduler "${scheduler}" not found`;
        const persistent = opts.has("-p") ? num("-p", 300, 2 ** 31) : 0;
        if (persistent === null) return "Illegal timeout";
        const flags = opts.get("-b") ?? "";
        if (!/^[a-z-]*(,[a-z-]+)*$/.test(flags)) return "Illegal scheduler flags";
        if (existing) Object.assign(existing, { scheduler, persistent, flags });
        else {
          services.set(key, {
            protocol,
            ...svc,
            scheduler,
            persistent,
            flags,
            reals: new Map(),
          });
        }
        return null;
      }
      case "-D":
        if (!existing) return "No such service";
        services.delete(key);
        return null;
      case "-a":
      case "-e":
      case "-d": {
        if (!existing) return "No such service";
        const real = parseEndpoint(opts.get("-r"));
        const weight = num("-w", 1, 65535);
        if (real === null || weight === null) return "Illegal destination";
        const rkey = hostPort(real.address, real.port);
        const cur = existing.reals.get(rkey);
        if (op === "-a") {
          if (cur) return "Destination already exists";
          existing.reals.set(rkey, { ...real, weight, activeConns: 0, inactiveConns: 0 });
        } else if (!cur) {
          return "No such destination";
        } else if (op === "-e") {
          cur.weight = weight;
        } else {
          existing.reals.delete(rkey);
        }
        return null;
      }
      default:
        return `Illegal command "${op}"`;
    }
  };

  const save = (): string => {
    const out: string[] = [];
    for (const s of services.values()) {
      const sel = `${SAVE_FLAG[s.protocol]} ${hostPort(s.address, s.port)}`;
      let line = `-A ${sel} -s ${s.scheduler}`;
      if (s.flags !== "") line += ` -b ${s.flags}`;
      if (s.persistent > 0) line += ` -p ${s.persistent}`;
      out.push(line);
      for (const r of s.reals.values()) {
        out.push(`-a ${sel} -r ${hostPort(r.address, r.port)} -m -w ${r.weight}`);
      }
    }
    return out.map((l) => l + "\n").join("");
  };

  const list = (): string => {
    const out = [
      "IP Virtual Server version 1.2.1 (size=4096)",
      "Prot LocalAddress:Port Scheduler Flags",
      "  -> RemoteAddress:Port           Forward Weight ActiveConn InActConn",
    ];
    for (const s of services.values()) {
      let line = `${s.protocol.padEnd(4)} ${hostPort(s.address, s.port)} ${s.scheduler}`;
      if (s.flags !== "") line += ` (${s.flags})`;
      if (s.persistent > 0) line += ` persistent ${s.persistent}`;
      out.push(line);
      for (const r of s.reals.values()) {
        out.push(
          `  -> ${hostPort(r.address, r.port).padEnd(28)} Masq    ${String(r.weight).padEnd(6)} ${
            String(r.activeConns).padEnd(10)
          } ${r.inactiveConns}`,
        );
      }
    }
    return out.join("\n") + "\n";
  };

  const run: CommandRunner = (input) => {
    calls.push(input);
    const args = input.args;
    const joined = args.join(" ");
    if (input.cmd !== "ipvsadm") return Promise.resolve(fail(`${input.cmd}: not faked`));
    if (joined === "-Sn" || joined === "-S -n" || joined === "--save -n") {
      return Promise.resolve(ok(save()));
    }
    if (joined === "-Ln" || joined === "-L -n" || joined === "--list -n") {
      return Promise.resolve(ok(list()));
    }
    if (args[0] === "--set") {
      const secs = args.slice(1);
      if (secs.length !== 3 || !secs.every((t) => /^\d+$/.test(t))) {
        return Promise.resolve(fail("ipvsadm: --set needs tcp, tcpfin and udp timeouts"));
      }
      (["tcp", "tcpfin", "udp"] as const).forEach((k, i) => {
        if (Number(secs[i]) > 0) timeouts[k] = Number(secs[i]);
      });
      return Promise.resolve(ok());
    }
    if (joined === "-C" || joined === "--clear") {
      services.clear();
      return Promise.resolve(ok());
    }
    if (joined === "-R" || joined === "--restore") {
      const text = input.stdin ?? "";
      if (failNeedle !== null && text.includes(failNeedle)) {
        return Promise.resolve(fail("Memory allocation problem"));
      }
      const errors: string[] = [];
      let last = 0;
      for (const raw of text.split("\n")) {
        const line = raw.trim();
        if (line === "") continue;
        const err = apply(line.split(/\s+/));
        last = err === null ? 0 : 1;
        if (err === null) continue;
        if (err.syntax) return Promise.resolve(fail([...errors, err.msg].join("\n") + "\n"));
        errors.push(err.msg);
      }
      return Promise.resolve({
        code: last,
        stdout: "",
        stderr: errors.map((e) => e + "\n").join(""),
      });
    }
    const err = apply(args);
    return Promise.resolve(err === null ? ok() : fail(err.msg));
  };

  return {
    run,
    calls,
    services,
    timeouts,
    setConnections(service, real, active, inactive) {
      const r = services.get(service)?.reals.get(real);
      if (r === undefined) throw new Error(`No destination "${real}" in "${service}"`);
      r.activeConns = active;
      r.inactiveConns = inactive;
    },
    failRestoreContaining(needle) {
      failNeedle = needle;
    },
  };
}
