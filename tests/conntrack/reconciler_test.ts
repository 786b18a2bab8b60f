import assert from "node:assert/strict";
import { createConntrackReconciler } from "../../lib/conntrack/mod.ts";
import { type ConntrackEntry } from "../../lib/conntrack/conntrack_entry.ts";
import { type ConntrackReconcilerMetrics } from "../../lib/conntrack/reconciler.ts";
import type { CommandInput, CommandRunner } from "../../lib/exec/mod.ts";
import { silentLogger } from "../../lib/log/mod.ts";
import type { IPFamily } from "../../lib/proxy/mod.ts";
import { ep, NODE_IP, sps, state, svc } from "../backends/iptables/state_fixtures.ts";

/** A conntrack table that answers `-L -f F -p P` and `-R -` batches of `-D` filters. */
function fakeConntrack(initial: ConntrackEntry[]) {
  const table = [...initial];
  const calls: string[] = [];
  const line = (e: ConntrackEntry) =>
    `${e.protocol.toLowerCase()}      17 29 src=${e.origSrc} dst=${e.origDst} sport=${e.origSport} ` +
    `dport=${e.origDport}${e.unreplied ? " [UNREPLIED]" : ""} src=${e.replySrc} dst=${e.origSrc} ` +
    `sport=${e.replySport} dport=${e.origSport} mark=0 use=1`;
  const run: CommandRunner = (input: CommandInput) => {
    const args = input.args;
    calls.push(args.join(" "));
    if (args[0] === "-L") {
      const proto = args[args.indexOf("-p") + 1]!.toUpperCase();
      const rows = table.filter((e) => e.protocol === proto).map(line);
      return Promise.resolve({ code: 0, stdout: rows.join("\n") + "\n", stderr: "" });
    }
    let stdout = "";
    for (const l of (input.stdin ?? "").split("\n").filter((x) => x)) {
      const w = l.split(" ");
      const v = (k: string) => w[w.indexOf(k) + 1];
      for (let i = table.length - 1; i >= 0; i--) {
        const e = table[i]!;
        if (
          e.protocol.toLowerCase() === v("-p") && e.origDst === v("--orig-dst") &&
          String(e.origDport) === v("--orig-port-dst") && e.replySrc === v("--reply-src") &&
          String(e.replySport) === v("--reply-port-src")
        ) {
          stdout += line(e) + "\n";
          table.splice(i, 1);
        }
      }
    }
    return Promise.resolve({ code: 0, stdout, stderr: "" });
  };
  return { table, calls, run };
}

function recorder() {
  const seen = { durations: 0, deleted: 0, failed: 0 };
  const metrics: ConntrackReconcilerMetrics = {
    observeDuration: (_f: IPFamily, _s: number) => void seen.durations++,
    deleted: (_f: IPFamily, n: number) => void (seen.deleted += n),
    failed: () => void seen.failed++,
  };
  return { seen, metrics };
}

const dns = svc({ protocol: "UDP", clusterIP: "172.30.0.53", port: 53, nodePort: 30053 });
const entry = (src: string, replySrc: string, o: Partial<ConntrackEntry> = {}): ConntrackEntry => ({
  protocol: "UDP",
  origSrc: src,
  origDst: "172.30.0.53",
  origSport: 40053,
  origDport: 53,
  replySrc,
  replySport: 8080,
  unreplied: false,
  ...o,
});

Deno.test("reconciler deletes only the stale flows, counts them, and deletes nothing the second time", async () => {
  const fake = fakeConntrack([
    entry("10.0.3.2", "10.0.1.2"),
    entry("10.0.3.3", "10.0.2.2"),
    entry("10.0.3.4", "10.0.2.2", { origDst: NODE_IP, origDport: 30053 }),
    entry("10.0.3.5", "10.0.2.2", { protocol: "SCTP" }),
  ]);
  const { seen, metrics } = recorder();
  const reconcile = createConntrackReconciler({ runner: fake.run, logger: silentLogger, metrics });
  const s = state([sps(dns, [ep("10.0.1.2", 8080)])]);
  const r = await reconcile(s);
  assert.deepEqual(r, { skipped: false, listed: 3, stale: 2, deleted: 2, failed: false });
  assert.deepEqual(fake.table.map((e) => e.origSrc), ["10.0.3.2", "10.0.3.5"]);
  assert.deepEqual(fake.calls, ["-L -f ipv4 -p udp", "-R -"], "no SCTP service, no SCTP listing");
  assert.deepEqual(seen, { durations: 1, deleted: 2, failed: 0 });
  assert.deepEqual(await reconcile(s), {
    skipped: false,
    listed: 1,
    stale: 0,
    deleted: 0,
    failed: false,
  });
  assert.equal(fake.calls.length, 3, "nothing stale, no delete command");
});

Deno.test("reconciler runs no command when no UDP or SCTP service exists", async () => {
  const fake = fakeConntrack([entry("10.0.3.2", "10.0.9.9")]);
  const reconcile = createConntrackReconciler({ runner: fake.run, logger: silentLogger });
  await reconcile(state([sps(svc(), [ep("10.0.1.2")])]));
  assert.deepEqual(fake.calls, []);
});

Deno.test("reconciler survives a failing, missing or babbling conntrack and deletes nothing unattributed", async () => {
  const s = state([sps(dns, [])]);
  const cases: Record<string, CommandRunner> = {
    "exit 1": () => Promise.resolve({ code: 1, stdout: "", stderr: "Operation not permitted" }),
    "not found": () => Promise.resolve({ code: 127, stdout: "", stderr: "conntrack: not found" }),
    "throws": () => Promise.reject(new Error("spawn failed")),
    "wrong protocol": () =>
      Promise.resolve({
        code: 0,
        stdout:
          "tcp 6 10 ESTABLISHED src=10.0.3.2 dst=172.30.0.53 sport=1 dport=53 src=10.0.1.2 dst=10.0.3.2 sport=8080 dport=1\n",
        stderr: "",
      }),
  };
  for (const [name, list] of Object.entries(cases)) {
    const deletes: string[] = [];
    const runner: CommandRunner = (input) => {
      if (input.args[0] === "-R") {
        deletes.push(input.stdin ?? "");
        return Promise.resolve({ code: 0, stdout: "", stderr: "" });
      }
      return list(input);
    };
    const { seen, metrics } = recorder();
    const r = await createConntrackReconciler({ runner, logger: silentLogger, metrics })(s);
    assert.equal(r.failed, true, name);
    assert.deepEqual(deletes, [], name);
    assert.equal(seen.failed, 1, name);
  }
});

Deno.test("reconciler skips unreadable lines and still deletes the readable stale ones", async () => {
  const deletes: string[] = [];
  const runner: CommandRunner = (input) => {
    if (input.args[0] === "-R") {
      deletes.push(input.stdin ?? "");
      return Promise.resolve({ code: 0, stdout: "udp deleted\n", stderr: "" });
    }
    return Promise.resolve({
      code: 0,
      stdout: "garbage here\n" +
        "udp 17 29 src=10.0.3.2 dst=172.30.0.53 sport=4 dport=53 src=10.0.9.9 dst=10.0.3.2 sport=8080 dport=4\n",
      stderr: "",
    });
  };
  const { seen, metrics } = recorder();
  const r = await createConntrackReconciler({ runner, logger: silentLogger, metrics })(
    state([sps(dns, [ep("10.0.1.2", 8080)])]),
  );
  assert.deepEqual(r, { skipped: false, listed: 1, stale: 1, deleted: 1, failed: false });
  assert.equal(deletes.length, 1);
  assert.match(deletes[0]!, /--reply-src 10\.0\.9\.9 /);
  assert.equal(seen.failed, 1, "the unreadable line is counted");
});

Deno.test("reconciler lists nothing after a partial sync that changed no UDP/SCTP service port, unless the last one failed", async () => {
  const fake = fakeConntrack([entry("10.0.3.2", "10.0.9.9")]);
  let failNext = false;
  const runner: CommandRunner = (input) =>
    failNext ? Promise.resolve({ code: 1, stdout: "", stderr: "busy" }) : fake.run(input);
  const reconcile = createConntrackReconciler({ runner, logger: silentLogger });
  const dnsPort = sps(dns, [ep("10.0.1.2", 8080)]);
  const web = sps(svc(), [ep("10.0.1.2")]);
  const s1 = state([dnsPort, web]);
  // Same UDP service port object, a TCP one changed: nothing UDP can have gone stale.
  const s2 = state([dnsPort, sps(svc(), [ep("10.0.2.2")])]);
  assert.equal((await reconcile(s2, s1)).skipped, true);
  assert.equal((await reconcile(s2, s1, true)).skipped, false, "a full sync always reconciles");
  assert.equal(fake.table.length, 0);
  failNext = true;
  fake.table.push(entry("10.0.3.3", "10.0.9.9"));
  assert.equal((await reconcile(s2, state([sps(dns, [])]))).failed, true);
  failNext = false;
  const retried = await reconcile(s2, s2);
  assert.equal(retried.skipped, false, "after a failure the next sync reconciles");
  assert.equal(retried.deleted, 1);
  assert.equal((await reconcile(s2, s2)).skipped, true);
});
