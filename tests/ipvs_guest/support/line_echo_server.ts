/**
 * A test backend that keeps TCP connections open (the echo server closes after one line): it
 * greets each connection with `<name> <peer>` (the echo-line format, so probes read it too),
 * then answers every line `x` with `<name> x` until the client goes. It prints `ready` once
 * listening, and `closed <peer>` or `reset <peer>` when a client leaves, for failure logs.
 * `--tcp`/`--udp` also serve scripts/echo_server.ts's one-line ports, so a pod needs one
 * process (each deno start-up costs seconds in the emulated guest).
 *
 *   deno run --allow-net line_echo_server.ts --name pod-a --port 9090 --tcp 8080 --udp 8080
 */
import { parseArgs } from "node:util";
import { startEchoServer } from "../../../scripts/echo_server.ts";
import { formatEchoLine, formatPeer, parsePortList } from "../../../scripts/netns/mod.ts";

const encoder = new TextEncoder();
const decoder = new TextDecoder();

async function serve(conn: Deno.TcpConn, name: string): Promise<void> {
  const peer = formatPeer(conn.remoteAddr.hostname, conn.remoteAddr.port);
  let how = "closed";
  try {
    await conn.write(encoder.encode(formatEchoLine({ name, peer })));
    let pending = "";
    const buf = new Uint8Array(4096);
    for (;;) {
      const n = await conn.read(buf);
      if (n === null) break;
      pending += decoder.decode(buf.subarray(0, n), { stream: true });
      let nl: number;
      while ((nl = pending.indexOf("\n")) >= 0) {
        const line = pending.slice(0, nl);
        pending = pending.slice(nl + 1);
        await conn.write(encoder.encode(`${name} ${line}\n`));
      }
    }
  } catch (err) {
    how = err instanceof Deno.errors.ConnectionReset ? "reset" : `error ${err}`;
  } finally {
    try {
      conn.close();
    } catch {
      // Already closed.
    }
    console.log(`${how} ${peer}`);
  }
}

if (import.meta.main) {
  const { values } = parseArgs({
    args: Deno.args,
    options: {
      name: { type: "string" },
      port: { type: "string" },
      tcp: { type: "string", default: "" },
      udp: { type: "string", default: "" },
    },
  });
  const port = Number(values.port);
  if (!values.name || !Number.isInteger(port) || port < 1 || port > 65535) {
    console.error(`Invalid arguments "${Deno.args.join(" ")}": expected --name NAME --port PORT`);
    Deno.exit(1);
  }
  const listener = Deno.listen({ hostname: "0.0.0.0", port });
  await startEchoServer({
    name: values.name,
    tcp: parsePortList(values.tcp, "--tcp"),
    udp: parsePortList(values.udp, "--udp"),
  });
  console.log("ready");
  for await (const conn of listener) serve(conn, values.name);
}
