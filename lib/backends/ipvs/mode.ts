/**
 * IPVS mode as the app sees it: upstream 1.27+'s start checks (ipset ≥ 6.0, the scheduler
 * probe), the host settings of NewProxier (sysctls, `ipvsadm --set` timeouts), one proxier per
 * family and `render`.
 */
import type { ProxyConfig } from "../../config/mod.ts";
import { type CommandRunner, ensureSysctl, readSysctl } from "../../exec/mod.ts";
import type { Logger } from "../../log/mod.ts";
import { parseCIDR } from "../../net/mod.ts";
import { detectIptablesFlavour, usableFamilies } from "../../netfilter/mod.ts";
import { requireIptables } from "../common/mod.ts";
import { type ModeDefinition, ModeUnavailableError } from "../mode.ts";
import type { Clock } from "../../sync/mod.ts";
import { registerIpvsMetrics } from "./_metrics.ts";
import { drainCheckIntervalMs } from "./drain_check_interval.ts";
import { ipvsModeOptions, resolveScheduler } from "./ipvs_options.ts";
import { ipvsTracer } from "./tracer.ts";
import { parseIpvsadmList } from "./ipvsadm_parser.ts";
import { createIpvsProxier } from "./proxier.ts";
import { renderIpvsText } from "./_render.ts";

/** The oldest ipset major version upstream accepts (MinIPSetCheckVersion "6.0"). */
const MIN_IPSET_MAJOR = 6;
/** The dummy virtual server upstream's scheduler probe adds and deletes (TEST-NET-2). */
export const SCHEDULER_PROBE_VS = "198.51.100.0:20000";

/** Settings (not the node) make the mode unusable: exit 1, naming the bad value. */
function checkSettings(config: ProxyConfig): string {
  try {
    const scheduler = resolveScheduler(config.ipvs.scheduler);
    for (const family of ["IPv4", "IPv6"] as const) {
      // resolveIpvsConfig's checks that need no state: excluded CIDRs.
      for (const raw of ipvsModeOptions(config, family).excludeCIDRs ?? []) {
        if (parseCIDR(raw.trim()) === null) {
          throw new RangeError(`Invalid --ipvs-exclude-cidrs entry "${raw}": expected a CIDR`);
        }
      }
    }
    return scheduler;
  } catch (err) {
    throw new ModeUnavailableError((err as Error).message, 1);
  }
}

/** `ipset --version` must work and say ≥ 6.0 (upstream's CanUseIPVSProxier). */
async function requireIpset(runner: CommandRunner): Promise<string> {
  const out = await runner({ cmd: "ipset", args: ["--version"] });
  const m = /v(\d+)\.(\d+)/.exec(out.stdout);
  if (out.code !== 0 || m === null) {
    throw new ModeUnavailableError(
      `Can't use the IPVS proxier: cannot run "ipset --version": ${out.stderr.trim()}`,
      2,
    );
  }
  const [major, minor] = [Number(m[1]), Number(m[2])];
  if (major < MIN_IPSET_MAJOR) {
    throw new ModeUnavailableError(
      `Can't use the IPVS proxier: ipset version "${
        m[0]
      }" is less than min required version "v6.0"`,
      2,
    );
  }
  return `${major}.${minor}`;
}

/**
 * Upstream 1.27+'s scheduler check: IPVS must answer a listing; unless a virtual server
 * already uses `scheduler`, a dummy one is added with it (the kernel autoloads ip_vs_<name>)
 * and deleted again.
 */
async function probeScheduler(runner: CommandRunner, scheduler: string): Promise<void> {
  const listed = await runner({ cmd: "ipvsadm", args: ["-Ln"] });
  if (listed.code !== 0) {
    throw new ModeUnavailableError(
      `Can't use the IPVS proxier: IPVS is not available (ipvsadm -Ln exited ${listed.code}: ${listed.stderr.trim()})`,
      2,
    );
  }
  const table = parseIpvsadmList(listed.stdout).table;
  if ([...table.values()].some((s) => s.vs.scheduler === scheduler)) return;
  const vs = ["-t", SCHEDULER_PROBE_VS];
  const added = await runner({ cmd: "ipvsadm", args: ["-A", ...vs, "-s", scheduler] });
  if (added.code !== 0) {
    throw new ModeUnavailableError(
      `Can't use the IPVS proxier: the kernel lacks the IPVS scheduler "${scheduler}" (ip_vs_${scheduler}): ${added.stderr.trim()}`,
      2,
    );
  }
  const deleted = await runner({ cmd: "ipvsadm", args: ["-D", ...vs] });
  if (deleted.code !== 0) {
    throw new ModeUnavailableError(
      `Can't use the IPVS proxier: cannot delete the probe virtual server ${SCHEDULER_PROBE_VS}: ${deleted.stderr.trim()}`,
      2,
    );
  }
}

/**
 * The kernel's major.minor, read as `kernel.osrelease` through the sysctl binary (already in
 * the run permission, unlike uname), or null.
 */
async function kernelVersion(runner: CommandRunner): Promise<[number, number] | null> {
  const m = /^(\d+)\.(\d+)/.exec(await readSysctl(runner, "kernel.osrelease") ?? "");
  return m === null ? null : [Number(m[1]), Number(m[2])];
}

/** The sysctls of NewProxier; a failure to set one is fatal (exit 2), as upstream. */
async function ensureIpvsSysctls(
  runner: CommandRunner,
  logger: Logger,
  strictARP: boolean,
): Promise<void> {
  const wanted: [string, number][] = [["net.ipv4.vs.conntrack", 1]];
  const kernel = await kernelVersion(runner);
  const atLeast = (v: [number, number], major: number, minor: number) =>
    v[0] > major || (v[0] === major && v[1] >= minor);
  if (kernel === null || !atLeast(kernel, 4, 1)) {
    logger.error(
      "Can't set sysctl net/ipv4/vs/conn_reuse_mode, kernel version must be at least 4.1",
      {
        kernel: kernel?.join("."),
      },
    );
  } else if (!atLeast(kernel, 5, 9)) {
    wanted.push(["net.ipv4.vs.conn_reuse_mode", 0]);
  }
  wanted.push(
    ["net.ipv4.vs.expire_nodest_conn", 1],
    ["net.ipv4.vs.expire_quiescent_template", 1],
    ["net.ipv4.ip_forward", 1],
  );
  if (strictARP) {
    wanted.push(["net.ipv4.conf.all.arp_ignore", 1], ["net.ipv4.conf.all.arp_announce", 2]);
  }
  for (const [name, value] of wanted) {
    if (await ensureSysctl(runner, name, value, logger) === "failed") {
      throw new ModeUnavailableError(
        `Can't use the IPVS proxier: cannot set sysctl "${name}" to ${value}`,
        2,
      );
    }
  }
  const bridge = await readSysctl(runner, "net.bridge.bridge-nf-call-iptables");
  if (bridge !== null && bridge !== "1") {
    logger.info(
      "Missing br-netfilter module or unset sysctl br-nf-call-iptables, proxy may not work as intended",
    );
  }
}

/** `ipvsadm --set tcp tcpfin udp` (seconds; 0 keeps the kernel's) when any is set; errors only logged. */
async function setIpvsTimeouts(
  runner: CommandRunner,
  logger: Logger,
  ipvs: ProxyConfig["ipvs"],
): Promise<void> {
  const secs = [ipvs.tcpTimeoutMs, ipvs.tcpFinTimeoutMs, ipvs.udpTimeoutMs].map((ms) =>
    Math.floor(ms / 1000)
  );
  if (secs.every((s) => s <= 0)) return;
  const out = await runner({ cmd: "ipvsadm", args: ["--set", ...secs.map(String)] });
  if (out.code !== 0) {
    logger.error("Failed to set IPVS timeouts", { timeouts: secs, stderr: out.stderr.trim() });
  }
}

/** What createIpvsMode takes; real defaults for all. */
export interface IpvsModeOptions {
  /** Environment lookup (the test-only KUBE_PROXY_IPVS_DRAIN_CHECK_INTERVAL); default Deno.env. */
  readonly env?: (name: string) => string | undefined;
  /** The clock of the drain check; default the system clock. */
  readonly clock?: Clock;
}

/** IPVS mode: start checks, host settings, then one proxier per family. */
export function createIpvsMode(options: IpvsModeOptions = {}): ModeDefinition {
  return {
    name: "ipvs",
    startMessage: "Using ipvs proxy",
    async prepare({ config, runner, logger }) {
      const scheduler = checkSettings(config);
      if (config.ipvs.scheduler === "") {
        logger.info("IPVS scheduler not specified, use rr by default");
      }
      const ipset = await requireIpset(runner);
      await probeScheduler(runner, scheduler);
      await requireIptables(runner);
      const flavour = await detectIptablesFlavour(runner);
      const families = await usableFamilies(runner, flavour);
      await ensureIpvsSysctls(runner, logger, config.ipvs.strictARP);
      await setIpvsTimeouts(runner, logger, config.ipvs);
      const drainInterval = drainCheckIntervalMs(
        options.env ?? ((name: string) => Deno.env.get(name)),
        logger,
      );
      return {
        families,
        details: { flavour, scheduler, ipset },
        // Upstream's IPVS runner syncs in full every --ipvs-sync-period (it has no canary).
        fullSyncPeriodMs: config.syncPeriodMs,
        createBackends: (metricsFor) =>
          families.map((family) => {
            const metrics = metricsFor(family);
            const backend = createIpvsProxier({
              ...ipvsModeOptions(config, family),
              family,
              flavour,
              runner,
              logger,
              metrics,
              drainCheckIntervalMs: drainInterval,
              ...(options.clock !== undefined ? { clock: options.clock } : {}),
            });
            return { family, backend, metrics };
          }),
      };
    },
    render(config, states) {
      checkSettings(config);
      try {
        return states.map((s) => renderIpvsText(s, ipvsModeOptions(config, s.family))).join("");
      } catch (err) {
        if (err instanceof RangeError) throw new ModeUnavailableError(err.message, 1);
        throw err;
      }
    },
    registerMetrics: registerIpvsMetrics,
    tracer: ipvsTracer,
  };
}

/** IPVS mode with its real defaults, as `--proxy-mode ipvs` runs it. */
export const ipvsMode: ModeDefinition = createIpvsMode();
