import { MODE_CONFIG_SECTIONS, ModeUnavailableError } from "../../../lib/backends/mod.ts";
import assert from "node:assert/strict";
import { DRAIN_CHECK_INTERVAL_ENV } from "../../../lib/backends/ipvs/drain_check_interval.ts";
import { createIpvsMode, ipvsMode, SCHEDULER_PROBE_VS } from "../../../lib/backends/ipvs/mode.ts";
import { defaultConfig, type ProxyConfig } from "../../../lib/config/mod.ts";
import { COMMAND_NOT_FOUND, type CommandRunner } from "../../../lib/exec/mod.ts";
import { createMemoryLogger, silentLogger } from "../../../lib/log/mod.ts";
import { createFakeIpAddr } from "../../support/fake_ip_addr.ts";
import { createFakeIpset } from "../../support/fake_ipset.ts";
import { createFakeIptables } from "../../support/fake_iptables.ts";
import { createFakeIpvsadm, type FakeIpvsadmOptions } from "../../support/fake_ipvsadm.ts";
import { createFakeSysctl } from "../../support/fake_sysctl.ts";
import { FakeClock } from "../../support/fake_clock.ts";
import { ep, port, state, svc } from "./fixtures.ts";

const KNOBS = {
  "net.ipv4.vs.conntrack": 0,
  "net.ipv4.vs.conn_reuse_mode": 1,
  "net.ipv4.vs.expire_nodest_conn": 0,
  "net.ipv4.vs.expire_quiescent_template": 0,
  "net.ipv4.ip_forward": 0,
  "net.ipv4.conf.all.arp_ignore": 0,
  "net.ipv4.conf.all.arp_announce": 0,
  "net.bridge.bridge-nf-call-iptables": 1,
};

/** A node of stateful fakes; `ipset` and `kernel` stand in for what the node has. */
function fakeNode(o: FakeIpvsadmOptions & { ipset?: string | null; kernel?: string } = {}) {
  const ip = createFakeIpAddr();
  const ipset = createFakeIpset();
  const ipvs = createFakeIpvsadm(o);
  const ipt = createFakeIptables();
  const sysctl = createFakeSysctl({ ...KNOBS, "kernel.osrelease": o.kernel ?? "6.1.0-31-amd64" });
  const run: CommandRunner = (input) => {
    if (input.cmd === "ip") return ip.run(input);
    if (input.cmd === "ipset") {
      if (o.ipset === null) {
        return Promise.resolve({ code: COMMAND_NOT_FOUND, stdout: "", stderr: "ipset: not found" });
      }
      if (o.ipset !== undefined && input.args[0] === "--version") {
        return Promise.resolve({
          code: 0,
          stdout: `ipset ${o.ipset}, protocol version: 6\n`,
          stderr: "",
        });
      }
      return ipset.run(input);
    }
    if (input.cmd === "ipvsadm") return ipvs.run(input);
    if (input.cmd === "sysctl") return sysctl.run(input);
    return ipt.run(input);
  };
  return { ip, ipset, ipvs, ipt, sysctl, run };
}

function config(edit: (c: ProxyConfig) => void = () => {}): ProxyConfig {
  const c = defaultConfig({ modeSections: MODE_CONFIG_SECTIONS });
  c.mode = "ipvs";
  edit(c);
  return c;
}

const rejectsWith = (exitCode: 1 | 2, re: RegExp) => (e: unknown) =>
  e instanceof ModeUnavailableError && e.exitCode === exitCode && re.test(e.message);

Deno.test("ipvsMode.prepare() sets upstream's sysctls, probes the scheduler, and leaves no probe behind", async () => {
  const n = fakeNode();
  const logger = createMemoryLogger();
  const prepared = await ipvsMode.prepare({ config: config(), runner: n.run, logger });
  assert.deepEqual(prepared.families, ["IPv4", "IPv6"]);
  assert.equal(prepared.details.scheduler, "rr");
  assert.equal(prepared.details.ipset, "7.17");
  for (const k of ["conntrack", "expire_nodest_conn", "expire_quiescent_template"]) {
    assert.equal(n.sysctl.values.get(`net.ipv4.vs.${k}`), "1", k);
  }
  assert.equal(n.sysctl.values.get("net.ipv4.ip_forward"), "1");
  // Kernel ≥ 5.9 keeps conn_reuse_mode; no strict ARP unless asked.
  assert.equal(n.sysctl.values.get("net.ipv4.vs.conn_reuse_mode"), "1");
  assert.equal(n.sysctl.values.get("net.ipv4.conf.all.arp_ignore"), "0");
  const probe = n.ipvs.calls.filter((c) => c.args.includes(SCHEDULER_PROBE_VS));
  assert.deepEqual(probe.map((c) => c.args.join(" ")), [
    `-A -t ${SCHEDULER_PROBE_VS} -s rr`,
    `-D -t ${SCHEDULER_PROBE_VS}`,
  ]);
  assert.equal(n.ipvs.services.size, 0);
  assert.ok(logger.lines.some((l) => l.includes("IPVS scheduler not specified, use rr")));
  assert.ok(!n.ipvs.calls.some((c) => c.args[0] === "--set"), "no timeouts, no --set");
  // Upstream's IPVS runner: a full sync (with its reads) every syncPeriod, not hourly.
  assert.equal(prepared.fullSyncPeriodMs, 30_000);
  const slow = await ipvsMode.prepare({
    config: config((c) => c.syncPeriodMs = 45_000),
    runner: fakeNode().run,
    logger,
  });
  assert.equal(slow.fullSyncPeriodMs, 45_000);
});

Deno.test("ipvsMode.prepare() sets strict ARP, conn_reuse_mode on kernels before 5.9, and the timeouts", async () => {
  const n = fakeNode({ kernel: "5.4.0-150-generic" });
  const c = config((c) => {
    c.ipvs.strictARP = true;
    c.ipvs.tcpTimeoutMs = 3600_000;
    c.ipvs.udpTimeoutMs = 30_000;
  });
  await ipvsMode.prepare({ config: c, runner: n.run, logger: silentLogger });
  assert.equal(n.sysctl.values.get("net.ipv4.vs.conn_reuse_mode"), "0");
  assert.equal(n.sysctl.values.get("net.ipv4.conf.all.arp_ignore"), "1");
  assert.equal(n.sysctl.values.get("net.ipv4.conf.all.arp_announce"), "2");
  assert.deepEqual(n.ipvs.timeouts, { tcp: 3600, tcpfin: 120, udp: 30 });
});

Deno.test("ipvsMode.prepare() skips the probe when a virtual server already uses the scheduler", async () => {
  const n = fakeNode({ schedulers: ["rr", "sh"] });
  await n.ipvs.run({ cmd: "ipvsadm", args: ["-A", "-t", "172.30.0.1:443", "-s", "sh"] });
  await ipvsMode.prepare({
    config: config((c) => c.ipvs.scheduler = "sh"),
    runner: n.run,
    logger: silentLogger,
  });
  assert.ok(!n.ipvs.calls.some((c) => c.args.includes(SCHEDULER_PROBE_VS)));
});

Deno.test("ipvsMode.prepare() fails with exit code 2 naming a scheduler the kernel lacks", async () => {
  const n = fakeNode({ schedulers: ["rr"] });
  await assert.rejects(
    ipvsMode.prepare({
      config: config((c) => c.ipvs.scheduler = "wrr"),
      runner: n.run,
      logger: silentLogger,
    }),
    rejectsWith(2, /scheduler "wrr" \(ip_vs_wrr\)/),
  );
  assert.equal(n.ipvs.services.size, 0);
});

Deno.test("ipvsMode.prepare() fails with exit code 2 without ipset, or with ipset older than 6.0", async () => {
  await assert.rejects(
    ipvsMode.prepare({
      config: config(),
      runner: fakeNode({ ipset: null }).run,
      logger: silentLogger,
    }),
    rejectsWith(2, /ipset --version/),
  );
  await assert.rejects(
    ipvsMode.prepare({
      config: config(),
      runner: fakeNode({ ipset: "v5.4" }).run,
      logger: silentLogger,
    }),
    rejectsWith(2, /ipset version "v5\.4" is less than min required version "v6\.0"/),
  );
});

Deno.test("ipvsMode.prepare() fails with exit code 2 when a sysctl cannot be set", async () => {
  const n = fakeNode();
  n.sysctl.readOnly.add("net.ipv4.vs.conntrack");
  await assert.rejects(
    ipvsMode.prepare({ config: config(), runner: n.run, logger: silentLogger }),
    rejectsWith(2, /sysctl "net\.ipv4\.vs\.conntrack"/),
  );
});

Deno.test("ipvsMode refuses a malformed scheduler name or excluded CIDR with exit code 1", async () => {
  const n = fakeNode();
  await assert.rejects(
    ipvsMode.prepare({
      config: config((c) => c.ipvs.scheduler = "rr -j ACCEPT"),
      runner: n.run,
      logger: silentLogger,
    }),
    rejectsWith(1, /Invalid --ipvs-scheduler "rr -j ACCEPT"/),
  );
  assert.throws(
    () => ipvsMode.render(config((c) => c.ipvs.excludeCIDRs = ["10.0.0.0/33"]), []),
    rejectsWith(1, /Invalid --ipvs-exclude-cidrs entry "10\.0\.0\.0\/33"/),
  );
});

Deno.test("ipvsMode backends program the fake kernel and expose the drain loop", async () => {
  const n = fakeNode();
  const prepared = await ipvsMode.prepare({
    config: config(),
    runner: n.run,
    logger: silentLogger,
  });
  const [v4] = prepared.createBackends(() => ({
    applyFailed: () => {},
    cleanupFailed: () => {},
    synced: () => {},
  }));
  assert.ok(v4 && v4.family === "IPv4" && typeof v4.backend.start === "function");
  await v4.backend.sync(state([port(svc({}), [ep("10.0.1.1")])]));
  assert.ok(n.ipvs.services.has("TCP 172.30.0.41:80"), [...n.ipvs.services.keys()].join());
});

const NO_METRICS = () => ({ applyFailed: () => {}, cleanupFailed: () => {}, synced: () => {} });

/** Drains 10.0.2.1 (one open connection), then ends the connection; returns the real server. */
async function drainOne(env: Record<string, string>, logger = createMemoryLogger()) {
  const n = fakeNode();
  const clock = new FakeClock();
  const mode = createIpvsMode({ env: (k) => env[k], clock });
  const prepared = await mode.prepare({ config: config(), runner: n.run, logger });
  const [v4] = prepared.createBackends(NO_METRICS);
  assert.ok(v4 !== undefined && v4.backend.start !== undefined);
  const ac = new AbortController();
  v4.backend.start(ac.signal);
  await v4.backend.sync(state([port(svc({}), [ep("10.0.1.1"), ep("10.0.2.1")])]));
  n.ipvs.setConnections("TCP 172.30.0.41:80", "10.0.2.1:80", 1, 0);
  await v4.backend.sync(state([port(svc({}), [ep("10.0.1.1")])]));
  n.ipvs.setConnections("TCP 172.30.0.41:80", "10.0.2.1:80", 0, 0);
  const real = () => n.ipvs.services.get("TCP 172.30.0.41:80")?.reals.get("10.0.2.1:80");
  assert.equal(real()?.weight, 0);
  return { clock, real, stop: () => ac.abort(), logger };
}

Deno.test(`createIpvsMode() checks draining real servers at the interval ${DRAIN_CHECK_INTERVAL_ENV} sets`, async () => {
  const d = await drainOne({ [DRAIN_CHECK_INTERVAL_ENV]: "2s" });
  await d.clock.advance(1_999);
  assert.ok(d.real() !== undefined, "not before the interval");
  await d.clock.advance(1);
  assert.equal(d.real(), undefined);
  d.stop();
});

Deno.test(`createIpvsMode() logs a bad ${DRAIN_CHECK_INTERVAL_ENV} and keeps upstream's minute`, async () => {
  for (const bad of ["soon", "10ms", "-2s"]) {
    const d = await drainOne({ [DRAIN_CHECK_INTERVAL_ENV]: bad });
    assert.ok(
      d.logger.lines.some((l) =>
        l.includes(`Invalid ${DRAIN_CHECK_INTERVAL_ENV}`) && l.includes(bad)
      ),
      d.logger.lines.join("\n"),
    );
    await d.clock.advance(59_999);
    assert.ok(d.real() !== undefined, `"${bad}": still the 1-minute check`);
    await d.clock.advance(1);
    assert.equal(d.real(), undefined);
    d.stop();
  }
  const unset = await drainOne({});
  await unset.clock.advance(59_999);
  assert.ok(unset.real() !== undefined, "unset: the 1-minute check");
  unset.stop();
});

Deno.test("ipvsMode.render() prints the four payloads of each family", () => {
  const text = ipvsMode.render(config((c) => c.ipvs.scheduler = "lc"), [
    state([port(svc({}), [ep("10.0.1.1")])]),
  ]);
  const headings = text.split("\n").filter((l) => l.startsWith("# "));
  assert.deepEqual(headings, [
    "# IPv4: ipset restore",
    "# IPv4: ipvsadm -R",
    "# IPv4: ip -batch - (kube-ipvs0 addresses)",
    "# IPv4: iptables-restore --noflush",
  ]);
  assert.match(text, /^-A -t 172\.30\.0\.41:80 -s lc$/m);
  assert.match(text, /^-a -t 172\.30\.0\.41:80 -r 10\.0\.1\.1:80 -m -w 1$/m);
  assert.match(text, /^add KUBE-CLUSTER-IP 172\.30\.0\.41,tcp:80/m);
});
