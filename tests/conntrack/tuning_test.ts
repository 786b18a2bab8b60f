import { MODE_CONFIG_SECTIONS } from "../../lib/backends/mod.ts";
import assert from "node:assert/strict";
import { tuneConntrack } from "../../lib/conntrack/mod.ts";
import { conntrackMax } from "../../lib/conntrack/tuning.ts";
import { type ConntrackConfig, defaultConfig } from "../../lib/config/mod.ts";
import type { CommandRunner } from "../../lib/exec/mod.ts";
import { createMemoryLogger, silentLogger } from "../../lib/log/mod.ts";

/**
 * A fake `sysctl` binary over a table of kernel values. Read-only keys behave like procps 4 in a
 * child network namespace: the write is refused with a message, yet the exit code is 0.
 */
function fakeKernel(values: Record<string, number>, readOnly: readonly string[] = []) {
  const table = new Map(Object.entries(values).map(([k, v]) => [k, String(v)]));
  const run: CommandRunner = ({ cmd, args }) => {
    assert.equal(cmd, "sysctl");
    if (args[0] === "-n") {
      const v = table.get(args[1]!);
      return Promise.resolve(
        v === undefined
          ? { code: 255, stdout: "", stderr: `sysctl: cannot stat /proc/sys/${args[1]}` }
          : { code: 0, stdout: `${v}\n`, stderr: "" },
      );
    }
    const [name, value] = args[1]!.split("=") as [string, string];
    if (readOnly.includes(name) || !table.has(name)) {
      return Promise.resolve({
        code: 0,
        stdout: "",
        stderr: `sysctl: setting key "${name}": Invalid argument\n`,
      });
    }
    table.set(name, value);
    return Promise.resolve({ code: 0, stdout: `${name} = ${value}\n`, stderr: "" });
  };
  return { run, get: (name: string) => Number(table.get(`net.netfilter.${name}`)) };
}

const KERNEL = {
  "net.netfilter.nf_conntrack_max": 65536,
  "net.netfilter.nf_conntrack_buckets": 16384,
  "net.netfilter.nf_conntrack_tcp_timeout_established": 432000,
  "net.netfilter.nf_conntrack_tcp_timeout_close_wait": 60,
  "net.netfilter.nf_conntrack_tcp_be_liberal": 0,
  "net.netfilter.nf_conntrack_udp_timeout": 30,
  "net.netfilter.nf_conntrack_udp_timeout_stream": 120,
};

function conntrack(over: Partial<ConntrackConfig> = {}): ConntrackConfig {
  return { ...defaultConfig({ modeSections: MODE_CONFIG_SECTIONS }).conntrack, ...over };
}

Deno.test("conntrackMax() scales maxPerCore by CPUs with min as the floor; 0 leaves it alone", () => {
  assert.equal(conntrackMax({ maxPerCore: 32768, min: 131072 }, 8), 262144);
  assert.equal(conntrackMax({ maxPerCore: 32768, min: 131072 }, 2), 131072);
  assert.equal(conntrackMax({ maxPerCore: 0, min: 131072 }, 64), 0);
});

Deno.test("tuneConntrack() applies upstream's defaults: max, hash size and TCP timeouts", async () => {
  const k = fakeKernel(KERNEL);
  await tuneConntrack({ config: conntrack(), runner: k.run, logger: silentLogger, cpus: 8 });
  assert.equal(k.get("nf_conntrack_max"), 262144);
  assert.equal(k.get("nf_conntrack_buckets"), 65536);
  assert.equal(k.get("nf_conntrack_tcp_timeout_established"), 86400);
  assert.equal(k.get("nf_conntrack_tcp_timeout_close_wait"), 3600);
  // Unset by default: left as the kernel has them.
  assert.equal(k.get("nf_conntrack_udp_timeout"), 30);
  assert.equal(k.get("nf_conntrack_tcp_be_liberal"), 0);
});

Deno.test("tuneConntrack() only raises nf_conntrack_max and the hash size", async () => {
  const k = fakeKernel({
    ...KERNEL,
    "net.netfilter.nf_conntrack_max": 1_000_000,
    "net.netfilter.nf_conntrack_buckets": 500_000,
  });
  const out = await tuneConntrack({
    config: conntrack(),
    runner: k.run,
    logger: silentLogger,
    cpus: 4,
  });
  assert.equal(k.get("nf_conntrack_max"), 1_000_000);
  assert.equal(k.get("nf_conntrack_buckets"), 500_000);
  assert.equal(out.get("net.netfilter.nf_conntrack_max"), "unchanged");
});

Deno.test("tuneConntrack() sets UDP timeouts and be_liberal when configured", async () => {
  const k = fakeKernel(KERNEL);
  await tuneConntrack({
    config: conntrack({
      maxPerCore: 0,
      tcpEstablishedTimeoutMs: 0,
      tcpCloseWaitTimeoutMs: 0,
      udpTimeoutMs: 45_000,
      udpStreamTimeoutMs: 200_000,
      tcpBeLiberal: true,
    }),
    runner: k.run,
    logger: silentLogger,
    cpus: 4,
  });
  assert.equal(k.get("nf_conntrack_udp_timeout"), 45);
  assert.equal(k.get("nf_conntrack_udp_timeout_stream"), 200);
  assert.equal(k.get("nf_conntrack_tcp_be_liberal"), 1);
  assert.equal(k.get("nf_conntrack_max"), 65536, "maxPerCore 0 leaves the maximum alone");
  assert.equal(k.get("nf_conntrack_tcp_timeout_established"), 432000);
});

Deno.test("tuneConntrack() warns and goes on where a knob is read-only (child netns, container)", async () => {
  const k = fakeKernel(KERNEL, [
    "net.netfilter.nf_conntrack_max",
    "net.netfilter.nf_conntrack_buckets",
  ]);
  const logger = createMemoryLogger();
  const out = await tuneConntrack({ config: conntrack(), runner: k.run, logger, cpus: 8 });
  assert.equal(out.get("net.netfilter.nf_conntrack_max"), "failed");
  assert.equal(out.get("net.netfilter.nf_conntrack_buckets"), "failed");
  assert.equal(k.get("nf_conntrack_max"), 65536);
  assert.equal(k.get("nf_conntrack_tcp_timeout_established"), 86400, "later knobs still set");
  const warnings = logger.lines.filter((l) => l.startsWith("W"));
  assert.equal(warnings.length, 2);
  assert.match(warnings[0]!, /nf_conntrack_max.*Invalid argument/);
});
