import assert from "node:assert/strict";
import { createMemoryLogger, silentLogger } from "../../lib/log/mod.ts";
import { createServiceHealthServer } from "../../lib/server/mod.ts";
import { ALL_ADDRESSES, type ServiceHealthTarget } from "../../lib/server/service_health.ts";
import { type ListenFn } from "../../lib/server/service_health_server.ts";

/**
 * A fake network stack: which (address, port) pairs are bound, by whom. Like the kernel it
 * refuses a second bind of a port, and the dual-stack wildcard `::` also holds 0.0.0.0.
 */
function fakeNetwork(opts: { ipv6?: boolean } = {}) {
  const bound = new Map<string, (req: Request) => Response>();
  const conflicts = (host: string, port: number) => {
    const wild = host === "::" || host === "0.0.0.0";
    for (const key of bound.keys()) {
      const at = key.lastIndexOf(":");
      const h = key.slice(0, at);
      if (Number(key.slice(at + 1)) !== port) continue;
      if (h === host || wild || h === "::" || h === "0.0.0.0") return true;
    }
    return false;
  };
  const listen: ListenFn = (hostname, port, handler) => {
    if (hostname === "::" && opts.ipv6 === false) {
      throw new Deno.errors.AddrNotAvailable("Address family not supported by protocol");
    }
    if (conflicts(hostname, port)) throw new Deno.errors.AddrInUse("Address already in use");
    const key = `${hostname}:${port}`;
    bound.set(key, handler);
    return {
      close: () => {
        bound.delete(key);
        return Promise.resolve();
      },
    };
  };
  /** What a client connecting to `ip:port` gets (the wildcard answers on every address). */
  const request = (ip: string, port: number): Response | null => {
    const handler = bound.get(`${ip}:${port}`) ?? bound.get(`:::${port}`) ??
      bound.get(`0.0.0.0:${port}`);
    return handler ? handler(new Request(`http://${ip}:${port}/`)) : null;
  };
  return { listen, request, bound };
}

function target(name: string, port: number, localEndpoints: number): [string, ServiceHealthTarget] {
  return [`demo/${name}`, { namespace: "demo", name, port, localEndpoints }];
}

Deno.test("ServiceHealthServer opens, updates and closes servers as services come and go", async () => {
  const net = fakeNetwork();
  const hs = createServiceHealthServer({
    healthy: () => true,
    logger: silentLogger,
    listen: net.listen,
  });
  await hs.sync(new Map([target("web", 32000, 0), target("api", 32001, 2)]), [ALL_ADDRESSES]);
  assert.deepEqual([...net.bound.keys()].sort(), [":::32000", ":::32001"]);
  assert.equal(net.request("192.168.0.2", 32000)?.status, 503);
  assert.equal(net.request("192.168.0.2", 32001)?.status, 200);

  // web gains endpoints, api goes away.
  await hs.sync(new Map([target("web", 32000, 1)]), [ALL_ADDRESSES]);
  assert.equal(net.request("192.168.0.2", 32000)?.status, 200);
  assert.equal(net.request("192.168.0.2", 32001), null, "api's server must be closed");

  // web moves to another port: the old one is released.
  await hs.sync(new Map([target("web", 32005, 1)]), [ALL_ADDRESSES]);
  assert.deepEqual([...net.bound.keys()], [":::32005"]);
  assert.deepEqual(hs.listening(), new Map([["demo/web", 32005]]));

  await hs.close();
  assert.equal(net.bound.size, 0);
});

Deno.test("ServiceHealthServer reports the proxy's health in every answer", async () => {
  const net = fakeNetwork();
  let healthy = true;
  const hs = createServiceHealthServer({
    healthy: () => healthy,
    logger: silentLogger,
    listen: net.listen,
  });
  await hs.sync(new Map([target("web", 32000, 3)]), [ALL_ADDRESSES]);
  assert.equal(net.request("192.168.0.2", 32000)?.status, 200);
  healthy = false;
  const res = net.request("192.168.0.2", 32000)!;
  assert.equal(res.status, 503);
  assert.equal((await res.json()).serviceProxyHealthy, false);
  await hs.close();
});

Deno.test("ServiceHealthServer falls back to 0.0.0.0 without IPv6 and binds listed node IPs", async () => {
  const v4 = fakeNetwork({ ipv6: false });
  const a = createServiceHealthServer({
    healthy: () => true,
    logger: silentLogger,
    listen: v4.listen,
  });
  await a.sync(new Map([target("web", 32000, 1)]), [ALL_ADDRESSES]);
  assert.deepEqual([...v4.bound.keys()], ["0.0.0.0:32000"]);
  await a.close();

  const net = fakeNetwork();
  const b = createServiceHealthServer({
    healthy: () => true,
    logger: silentLogger,
    listen: net.listen,
  });
  await b.sync(new Map([target("web", 32000, 1)]), ["192.168.0.2", "fd00:192::2"]);
  assert.deepEqual([...net.bound.keys()].sort(), ["192.168.0.2:32000", "fd00:192::2:32000"]);
  await b.close();
});

Deno.test("ServiceHealthServer logs a port it cannot bind and retries it on the next sync", async () => {
  const net = fakeNetwork();
  const squatter = net.listen("0.0.0.0", 32000, () => new Response("not ours"));
  const logger = createMemoryLogger();
  const hs = createServiceHealthServer({ healthy: () => true, logger, listen: net.listen });
  await hs.sync(new Map([target("web", 32000, 1)]), [ALL_ADDRESSES]);
  assert.deepEqual(hs.listening(), new Map());
  assert.match(logger.lines.join("\n"), /^E.*"Failed to start healthcheck".*port=32000/m);

  await squatter.close();
  await hs.sync(new Map([target("web", 32000, 1)]), [ALL_ADDRESSES]);
  assert.deepEqual(hs.listening(), new Map([["demo/web", 32000]]));
  assert.equal(net.request("192.168.0.2", 32000)?.status, 200);
  await hs.close();
});
