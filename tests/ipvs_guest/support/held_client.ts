/**
 * The client end of a held TCP connection, driven line by line on stdin so a test can keep a
 * connection open across proxy changes: it connects and prints `hello <greeting>`; then
 * `send X` writes X and prints `reply <answer>`; `reset` sends one more line, reads one byte
 * of the answer and exits with the rest unread, which makes Linux end the connection with a
 * lone RST (IPVS then ages it out in 10 s instead of TIME_WAIT's 2 minutes); EOF closes normally.
 *
 *   deno run --allow-net held_client.ts 172.30.0.50:80
 */
const encoder = new TextEncoder();
const decoder = new TextDecoder();

/** Reads one answer line (the server sends nothing unasked, so no bytes are over-read). */
async function readLine(conn: Deno.TcpConn): Promise<string> {
  let text = "";
  const buf = new Uint8Array(512);
  while (!text.includes("\n")) {
    const n = await conn.read(buf);
    if (n === null) throw new Error(`Connection closed after "${text}"`);
    text += decoder.decode(buf.subarray(0, n), { stream: true });
  }
  return text.trimEnd();
}

async function* stdinLines(): AsyncGenerator<string> {
  let pending = "";
  for await (const chunk of Deno.stdin.readable) {
    pending += decoder.decode(chunk, { stream: true });
    let nl: number;
    while ((nl = pending.indexOf("\n")) >= 0) {
      yield pending.slice(0, nl);
      pending = pending.slice(nl + 1);
    }
  }
}

if (import.meta.main) {
  const [host, port] = (Deno.args[0] ?? "").split(":");
  const conn = await Deno.connect({ hostname: host ?? "", port: Number(port) });
  console.log(`hello ${await readLine(conn)}`);
  try {
    for await (const cmd of stdinLines()) {
      if (cmd.startsWith("send ")) {
        await conn.write(encoder.encode(`${cmd.slice(5)}\n`));
        console.log(`reply ${await readLine(conn)}`);
      } else if (cmd === "reset") {
        await conn.write(encoder.encode("bye\n"));
        await conn.read(new Uint8Array(1));
        // No conn.close(): Deno's close sends a FIN first (shutdown), and the server's FIN may
        // then beat the RST. Exiting leaves the kernel to close the socket: unread data, so RST.
        console.log("reset");
        Deno.exit(0);
      } else {
        console.log(`error unknown command "${cmd}"`);
      }
    }
  } catch (err) {
    console.log(`error ${err}`);
    Deno.exit(1);
  }
  conn.close();
  console.log("closed");
}
