/**
 * serveOn() against real sockets: a port another process holds fails the start with
 * `--bind-address-hard-fail`, and otherwise is logged and retried until it frees.
 */
import assert from "node:assert/strict";
import { createMemoryLogger } from "../../lib/log/mod.ts";
import { BindFailure, serveOn } from "../../lib/server/mod.ts";
import { splitBindAddress } from "../../lib/server/serve.ts";

const handler = () => new Response("ok");

/** Holds a free loopback port the way another program would; close() frees it. */
function holdPort(): Deno.Listener & { port: number } {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  return Object.assign(listener, { port: (listener.addr as Deno.NetAddr).port });
}

Deno.test("splitBindAddress() reads host:port and [v6]:port", () => {
  assert.deepEqual(splitBindAddress("127.0.0.1:10249"), { hostname: "127.0.0.1", port: 10249 });
  assert.deepEqual(splitBindAddress("[::1]:10256"), { hostname: "::1", port: 10256 });
  assert.deepEqual(splitBindAddress(":10256"), { hostname: "0.0.0.0", port: 10256 });
  assert.throws(() => splitBindAddress("10256"), /Invalid bind address "10256"/);
});

Deno.test("serveOn() with hard fail throws BindFailure when the port is taken", () => {
  const held = holdPort();
  const controller = new AbortController();
  try {
    assert.throws(
      () =>
        serveOn({
          server: "metrics",
          address: `127.0.0.1:${held.port}`,
          handler,
          signal: controller.signal,
          logger: createMemoryLogger(),
          hardFail: true,
        }),
      (err: unknown) =>
        err instanceof BindFailure && err.server === "metrics" &&
        /Cannot start the metrics server on "127\.0\.0\.1:\d+"/.test(err.message),
    );
  } finally {
    controller.abort();
    held.close();
  }
});

Deno.test("serveOn() without hard fail logs, retries, and serves once the port frees", async () => {
  const held = holdPort();
  const controller = new AbortController();
  const logger = createMemoryLogger();
  const address = `127.0.0.1:${held.port}`;
  try {
    const served = serveOn({
      server: "healthz",
      address,
      handler,
      signal: controller.signal,
      logger,
      hardFail: false,
      retryMs: 50,
    });
    assert.equal(logger.lines.length, 1);
    assert.match(logger.lines[0]!, /Failed to start the healthz server; retrying/);
    assert.match(logger.lines[0]!, /127\.0\.0\.1/);
    // Still taken after a few retries: each one is logged, nothing listens.
    await new Promise((r) => setTimeout(r, 180));
    assert.ok(logger.lines.length >= 3, logger.lines.join("\n"));
    held.close();
    assert.equal(await served.listening, true);
    assert.ok(logger.lines.some((l) => /Started the healthz server/.test(l)));
    const res = await fetch(`http://${address}/`);
    assert.equal(await res.text(), "ok");
    controller.abort();
    await served.finished;
  } finally {
    controller.abort();
    try {
      held.close();
    } catch {
      // Already closed by the test.
    }
  }
});

Deno.test("serveOn() that never bound stops retrying when the signal aborts", async () => {
  const held = holdPort();
  const controller = new AbortController();
  try {
    const served = serveOn({
      server: "metrics",
      address: `127.0.0.1:${held.port}`,
      handler,
      signal: controller.signal,
      logger: createMemoryLogger(),
      hardFail: false,
      retryMs: 10_000,
    });
    controller.abort();
    await served.finished;
    assert.equal(await served.listening, false);
  } finally {
    held.close();
  }
});
