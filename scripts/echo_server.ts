/**
 * A test backend: answers every TCP connection and every UDP datagram with one line,
 * `<name> <peer ip:port>`, so tests see which endpoint answered and whether the client was
 * masqueraded. TCP connections are closed after the line. Listens on IPv4 and, when the
 * namespace has it, IPv6; prints `ready` on stdout once every port is bound.
 *
 *   deno run --allow-net scripts/echo_server.ts --name pod-a --tcp 80,8080 --udp 53,8080
 */
import dgram from "node:dgram";
import { parseArgs } from "node:util";
import { formatEchoLine, formatPeer } from "./netns/echo_line.ts";
import { parsePortList } from "./netns/host_port.ts";

const encoder = new TextEncoder();

/** What one echo server serves. */
export interface EchoServerOptions {
  readonly name: string;
  readonly tcp: readonly number[];
  readonly udp: readonly number[];
}

async function serveTcp(listener: Deno.TcpListener, name: string): Promise<void> {
  for await (const conn of listener) {
    const peer = formatPeer(conn.remoteAddr.hostname, conn.remoteAddr.port);
    conn.write(encoder.encode(formatEchoLine({ name, peer })))
      .catch(() => {})
      .finally(() => {
        try {
          conn.close();
        } catch {
          // The client went away first.
        }
      });
  }
}

function bindUdp(type: "udp4" | "udp6", port: number, name: string): Promise<dgram.Socket> {
  const sock = dgram.createSocket(type === "udp6" ? { type, ipv6Only: true } : { type });
  sock.on("message", (_msg, rinfo) => {
    sock.send(
      formatEchoLine({ name, peer: formatPeer(rinfo.address, rinfo.port) }),
      rinfo.port,
      rinfo.address,
    );
  });
  return new Promise((resolve, reject) => {
    sock.once("error", reject);
    sock.bind(port, type === "udp6" ? "::" : "0.0.0.0", () => {
      sock.off("error", reject);
      sock.on("error", (err) => console.error(`UDP ${port} error: ${err.message}`));
      resolve(sock);
    });
  });
}

/** Binds every port (IPv6 best effort) and serves until the process is killed. */
export async function startEchoServer(opts: EchoServerOptions): Promise<void> {
  for (const port of opts.tcp) {
    let listener: Deno.TcpListener;
    try {
      // "::" is dual-stack on Linux; IPv4 clients show up as ::ffff:a.b.c.d.
      listener = Deno.listen({ hostname: "::", port });
    } catch (err) {
      console.error(`No IPv6 TCP on port ${port}: ${err instanceof Error ? err.message : err}`);
      listener = Deno.listen({ hostname: "0.0.0.0", port });
    }
    serveTcp(listener, opts.name);
  }
  for (const port of opts.udp) {
    await bindUdp("udp4", port, opts.name);
    try {
      await bindUdp("udp6", port, opts.name);
    } catch (err) {
      console.error(`No IPv6 UDP on port ${port}: ${err instanceof Error ? err.message : err}`);
    }
  }
}

if (import.meta.main) {
  const { values } = parseArgs({
    args: Deno.args,
    options: {
      name: { type: "string" },
      tcp: { type: "string", default: "" },
      udp: { type: "string", default: "" },
    },
    strict: true,
  });
  try {
    if (!values.name || !/^\S+$/.test(values.name)) {
      throw new Error(`Invalid --name "${values.name ?? ""}": expected a non-empty word`);
    }
    const tcp = parsePortList(values.tcp, "--tcp");
    const udp = parsePortList(values.udp, "--udp");
    if (tcp.length + udp.length === 0) throw new Error(`Missing ports: give --tcp and/or --udp`);
    await startEchoServer({ name: values.name, tcp, udp });
  } catch (err) {
    console.error(err instanceof Error ? err.message : String(err));
    Deno.exit(1);
  }
  console.log("ready");
}
