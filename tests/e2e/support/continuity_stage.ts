/**
 * The stage every continuity case runs on, in any mode: one topology with six server pods and
 * two clients on the node and one server pod on node2, one server process per pod (one-line TCP
 * and UDP echo, a UDP sink port, and connections held open), and the running proxy. Cases own
 * the whole cluster while they run (each publishes every object it needs), so one stage serves
 * several cases in a row, as the IPVS guest needs (its start-ups are slow under emulation).
 * IP plan: node 192.168.0.2, pods 10.0.1.2-10.0.8.2, node2's pod 10.1.1.2, services
 * 172.30.0.0/16, external client 203.0.113.2.
 */
import type { ProxyModeName } from "../../../lib/backends/mod.ts";
import { scaledMs, type SpawnedProcess, type Topology } from "../../../scripts/netns/mod.ts";
import { list, node1 } from "./cluster_objects.ts";
import { type Traffic, traffic } from "./continuity.ts";
import { type ManifestDir, startProxy } from "./proxy_process.ts";
import { withTopology } from "./with_topology.ts";
import { HOLD_PORT, spawnLineEcho } from "../../ipvs_guest/support/line_echo.ts";

/** The node's server pods, in the order the cases use them. */
export const SERVER_PODS = [
  { name: "p1", ip: "10.0.1.2" },
  { name: "p2", ip: "10.0.2.2" },
  { name: "p3", ip: "10.0.3.2" },
  { name: "p4", ip: "10.0.4.2" },
  { name: "p5", ip: "10.0.5.2" },
  { name: "p6", ip: "10.0.6.2" },
] as const;
/** The node's client pods: each sender has its own, as ICMP errors are rate-limited per address. */
export const CLIENT_PODS = [
  { name: "client", ip: "10.0.7.2" },
  { name: "client2", ip: "10.0.8.2" },
] as const;
/** The server pod on node2 (a remote endpoint). */
export const REMOTE_POD = { name: "far", ip: "10.1.1.2" } as const;

/** The proxy's log once both other modes' leftovers are removed. */
const LEFTOVERS_DONE = /Cleaned up leftover state[\s\S]*Cleaned up leftover state/;

/**
 * Whether `log` (the proxy's output since a publish) shows the change applied: a sync that took
 * pending changes in, or a sync after it, completed without a failure to apply.
 */
function changeApplied(log: string): boolean {
  let from = 0, changed = false;
  for (const m of log.matchAll(SYNC_COMPLETE)) {
    const failed = APPLY_FAILED.test(log.slice(from, m.index));
    from = m.index + m[0].length;
    changed ||= Number(m[1]) + Number(m[2]) > 0;
    if (changed && !failed) return true;
  }
  return false;
}

/** A family's sync that did not apply (the sync runner retries it). */
const APPLY_FAILED = /"Failed to apply proxy rules"/;
/** The sync runner's closing line, with the changes it took in. */
const SYNC_COMPLETE = /SyncProxyRules complete" .*pendingServices=(\d+) pendingEndpoints=(\d+)/g;

/** The port of the servers' held connections (one echo line per line sent). */
export { HOLD_PORT };
/** The servers' UDP port whose answers the sink pods drop (see oneWaySink). */
export const SINK_PORT = 9999;

/** How to set a stage up. */
export interface ContinuityStageOptions {
  readonly prefix: string;
  readonly mode: ProxyModeName;
  /** The mode's binaries on the node; missing ones fail loudly. */
  readonly commands: readonly string[];
  /**
   * Milliseconds between the main TCP client's connections, per target; default 20 (50/s). The
   * emulated guest's one vCPU cannot carry more than about 50 connections/s in all.
   */
  readonly tcpIntervalMs?: number;
  /**
   * The pods whose servers start with the stage; default every server pod. Each case starts
   * the rest it needs: the guest's 1 GiB holds few idle deno processes beside a starting proxy.
   */
  readonly servers?: readonly string[];
}

/** A topology, its servers and the running proxy, as the cases drive them. */
export class ContinuityStage {
  readonly #servers = new Map<string, SpawnedProcess>();
  /** The proxy's flags after --manifests (a restart starts it with them again). */
  readonly args: readonly string[];
  /** Time for a traffic process's deno to start before it sends (several seconds emulated). */
  readonly leadMs = scaledMs(1500);
  /** How long an answered TCP attempt may take on this machine before it counts as failed. */
  readonly tcpTimeoutMs = scaledMs(2000);
  /**
   * After a sync is applied, how long until its effect shows in the traffic: the next packet
   * of a flow, and the client processes reading their answers (slow under emulation).
   */
  readonly settleMs = scaledMs(200);
  /** Milliseconds between the main TCP client's connections (per target). */
  readonly tcpIntervalMs: number;
  proxy: SpawnedProcess | null = null;

  constructor(
    readonly mode: ProxyModeName,
    readonly topo: Topology,
    readonly dir: ManifestDir,
    tcpIntervalMs: number,
  ) {
    this.args = [`--proxy-mode=${mode}`];
    this.tcpIntervalMs = tcpIntervalMs;
  }

  /** The running proxy; throws before the first start. */
  get running(): SpawnedProcess {
    if (this.proxy === null) throw new Error("The continuity stage's proxy is not running");
    return this.proxy;
  }

  /** Writes the cluster as the node and `objects`, replacing what the last case published. */
  publish(objects: readonly unknown[]): Promise<void> {
    return this.dir.write("cluster.json", list([node1(), ...objects]));
  }

  /**
   * Publishes `objects` and waits until the proxy has applied them: its next sync that took
   * pending changes in (the cases publish while the proxy is idle, so a sync already running
   * when they write has none), or when that sync failed (the runner retries it), the next one
   * that did not. Returns the milliseconds from the write to the applied sync.
   */
  async publishApplied(objects: readonly unknown[]): Promise<number> {
    const proxy = this.running;
    const mark = proxy.output().length;
    const at = Date.now();
    await this.publish(objects);
    const timeoutMs = scaledMs(15_000);
    while (true) {
      if (changeApplied(proxy.output().slice(mark))) return Date.now() - at;
      if (Date.now() - at > timeoutMs) {
        throw new Error(`The proxy applied no change within ${timeoutMs} ms of a publish`);
      }
      await new Promise((r) => setTimeout(r, 20));
    }
  }

  /** Starts the proxy (again) and waits until it is ready. */
  async startProxy(label = "proxy"): Promise<SpawnedProcess> {
    this.proxy = await startProxy(this.topo, [`--manifests=${this.dir.path}`, ...this.args], {
      flavour: "legacy",
      label,
    });
    return this.proxy;
  }

  /** Starts the server process of each pod not serving yet (in parallel); waits until they listen. */
  async startServers(names: readonly string[]): Promise<void> {
    await Promise.all(
      names.filter((n) => !this.#servers.has(n)).map(async (name) => {
        const proc = spawnLineEcho(this.topo, name, [8080, SINK_PORT], `server ${name}`);
        this.#servers.set(name, proc);
        await proc.waitForOutput(/^ready$/m, scaledMs(20_000));
      }),
    );
  }

  /** Stops one pod's server, as its pod going away does. */
  async stopServer(name: string): Promise<void> {
    await this.#servers.get(name)?.kill(500);
    this.#servers.delete(name);
  }

  /** When traffic started now can begin: after its deno has started. */
  startAt(): number {
    return Date.now() + this.leadMs;
  }

  /** Starts a traffic process (continuity_traffic.ts flags) in `from`, beginning at `t0`. */
  traffic(from: string, t0: number, args: readonly string[]): Traffic {
    return traffic(this.topo, from, t0, [...args]);
  }
}

/** Runs `body` on a fresh stage with every server and the proxy running, then tears it down. */
export function withContinuityStage(
  opts: ContinuityStageOptions,
  body: (stage: ContinuityStage) => Promise<void>,
): Promise<void> {
  return withTopology({
    prefix: opts.prefix,
    ipv6: false,
    pods: [...SERVER_PODS, ...CLIENT_PODS],
    remotePods: [REMOTE_POD],
    requireCommands: ["conntrack", "iptables-legacy", ...opts.commands],
  }, async ({ topo, dir }) => {
    const stage = new ContinuityStage(opts.mode, topo, dir, opts.tcpIntervalMs ?? 20);
    await stage.publish([]);
    // Everything starts at once: start-ups overlap their waits.
    await Promise.all([
      stage.startProxy(),
      stage.startServers(opts.servers ?? [...SERVER_PODS, REMOTE_POD].map((p) => p.name)),
    ]);
    // After its first sync the proxy removes the two other modes' leftovers: the cases' first
    // change would wait behind that pass (seconds in the emulated guest).
    await stage.running.waitForOutput(LEFTOVERS_DONE, scaledMs(30_000));
    await body(stage);
  });
}
