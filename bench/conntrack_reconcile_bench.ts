/**
 * One conntrack reconcile at scale: 10,000 UDP services, 100,000 conntrack entries (ten clients
 * per service, made with `conntrack -R` of `-I` lines, no traffic) in a throwaway namespace.
 * "unchanged" is every sync's and a restart's cost (nothing stale); "10 endpoints replaced"
 * deletes 100 stale entries in 10 filters. Needs root.
 */
import { createConntrackReconciler } from "../lib/conntrack/mod.ts";
import { silentLogger } from "../lib/log/mod.ts";
import { createBenchNamespace, netnsRunner } from "./bench_netns.ts";
import { ep, sps, state, svc } from "../tests/backends/iptables/state_fixtures.ts";

const SERVICES = 10_000, CLIENTS = 10, CHANGED = 10;

const serviceIP = (i: number) => `172.30.${i >> 8}.${i & 255}`;
const endpointIP = (i: number, gen = 0) => `10.${1 + gen}.${i >> 8}.${i & 255}`;
const clientIP = (c: number) => `10.200.0.${c + 1}`;

function insertLines(services: number[]): string {
  const lines: string[] = [];
  for (const i of services) {
    for (let c = 0; c < CLIENTS; c++) {
      const sport = 20000 + c;
      lines.push(
        `-I -p udp -s ${clientIP(c)} -d ${serviceIP(i)} --sport ${sport} --dport 53 ` +
          `-r ${endpointIP(i)} -q ${
            clientIP(c)
          } --reply-port-src 8080 --reply-port-dst ${sport} -t 3600`,
      );
    }
  }
  return lines.join("\n") + "\n";
}

function proxyState(changed: number) {
  return state(
    Array.from({ length: SERVICES }, (_, i) =>
      sps(
        svc({ name: `dns${i}`, protocol: "UDP", clusterIP: serviceIP(i), port: 53 }),
        [ep(endpointIP(i, i < changed ? 1 : 0), 8080)],
      )),
  );
}

const ns = await createBenchNamespace("ct");
const runner = netnsRunner(ns);
const all = Array.from({ length: SERVICES }, (_, i) => i);
const filled = await runner({ cmd: "conntrack", args: ["-R", "-"], stdin: insertLines(all) });
if (filled.code !== 0) throw new Error(`Filling the conntrack table failed: ${filled.stderr}`);
const reconcile = createConntrackReconciler({ runner, logger: silentLogger });
const unchanged = proxyState(0);
const moved = proxyState(CHANGED);
const stale = insertLines(all.slice(0, CHANGED));

Deno.bench({
  name: "reconcile 100,000 UDP entries of 10,000 services, unchanged",
  group: "conntrack reconcile",
  baseline: true,
  n: 10,
  warmup: 1,
  async fn() {
    const r = await reconcile(unchanged);
    if (r.deleted !== 0 || r.listed !== SERVICES * CLIENTS) throw new Error(JSON.stringify(r));
  },
});

Deno.bench({
  name: "reconcile 100,000 UDP entries of 10,000 services, 10 endpoints replaced",
  group: "conntrack reconcile",
  n: 5,
  warmup: 1,
  async fn(b) {
    await runner({ cmd: "conntrack", args: ["-R", "-"], stdin: stale });
    b.start();
    const r = await reconcile(moved);
    b.end();
    if (r.deleted !== CHANGED * CLIENTS) throw new Error(JSON.stringify(r));
  },
});
