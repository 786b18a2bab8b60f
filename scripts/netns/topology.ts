/**
 * A throwaway test topology in network namespaces (see plan.ts for the wiring and IP plan):
 * the proxy's node, node2 with remote pods, local pods and an external client, plus helpers
 * to run commands, start echo servers and send probes inside them.
 */
import { type CommandOutput, denoCommandRunner } from "../../lib/exec/mod.ts";
import {
  addNamespaces,
  deleteNamespaces,
  deleteStaleNamespaces,
  ipBatch,
  requireNetnsSupport,
  setSysctls,
} from "./namespaces.ts";
import { planTopology, type PodPlan, type TopologyOptions, type TopologyPlan } from "./plan.ts";
import { type ProbeAnswer, probeArgs, type ProbeSpec } from "./probe_types.ts";
import { type SpawnedProcess, spawnInNamespace, type SpawnOptions } from "./process.ts";

/** A namespace by logical name: "node", "node2", "external" or a pod's name. */
export type NamespaceRef = string;

/** Ports an echo server answers on. Defaults: TCP 80 and 8080, UDP 53 and 8080. */
export interface EchoPorts {
  readonly tcp?: readonly number[];
  readonly udp?: readonly number[];
}

/** One probe batch, sent from a namespace. */
export interface ProbeRequest extends ProbeSpec {
  readonly from: NamespaceRef;
}

/** A built topology; always `destroy()` it in a `finally`. */
export interface Topology {
  readonly plan: TopologyPlan;
  /** The real namespace name of a logical one (throws on an unknown name). */
  nsName(ref: NamespaceRef): string;
  /** The planned pod with this name (throws on an unknown name). */
  pod(name: string): PodPlan;
  /** Runs a command to completion inside a namespace; never throws on non-zero exit. */
  exec(
    ref: NamespaceRef,
    cmd: string,
    args: readonly string[],
    opts?: { stdin?: string },
  ): Promise<CommandOutput>;
  /** Starts a long-running process inside a namespace; `destroy()` kills it. */
  spawn(
    ref: NamespaceRef,
    cmd: string,
    args: readonly string[],
    opts?: SpawnOptions,
  ): SpawnedProcess;
  /** Starts an echo server in every pod (or the named ones) and waits until all are listening. */
  startEchoServers(opts?: EchoPorts & { readonly pods?: readonly string[] }): Promise<void>;
  /** Starts one echo server in any namespace (e.g. the node), answering with `name`. */
  startEchoServer(
    ref: NamespaceRef,
    opts?: EchoPorts & { readonly name?: string },
  ): Promise<SpawnedProcess>;
  /** Runs scripts/probe.ts inside `from`; one answer per attempt, in order. */
  probe(req: ProbeRequest): Promise<ProbeAnswer[]>;
  /** Every spawned process's label and output, for printing when a test fails. */
  logs(): string;
  /** Kills every process and deletes every namespace; safe to call twice or after a failure. */
  destroy(): Promise<void>;
}

const ECHO_SERVER = decodeURIComponent(new URL("../echo_server.ts", import.meta.url).pathname);
const PROBE = decodeURIComponent(new URL("../probe.ts", import.meta.url).pathname);
const DEFAULT_TCP = [80, 8080];
const DEFAULT_UDP = [53, 8080];

/** Builds a topology, first deleting leftovers of a crashed run with the same prefix. */
export async function createTopology(opts: TopologyOptions): Promise<Topology> {
  const plan = planTopology(opts);
  await requireNetnsSupport();
  await deleteStaleNamespaces(plan.prefix);
  const topo = new NetnsTopology(plan);
  try {
    await topo.build();
  } catch (err) {
    await topo.destroy().catch(() => {});
    throw err;
  }
  return topo;
}

class NetnsTopology implements Topology {
  private readonly processes: SpawnedProcess[] = [];
  private readonly allNamespaces: string[];

  constructor(readonly plan: TopologyPlan) {
    const n = plan.namespaces;
    this.allNamespaces = [n.node, n.node2, n.external, ...plan.pods.map((p) => p.ns)];
  }

  async build(): Promise<void> {
    await addNamespaces(this.allNamespaces);
    await Promise.all(this.allNamespaces.map((n) => setSysctls(n, this.plan.sysctls.get(n) ?? [])));
    await Promise.all([...this.plan.links].map(([n, lines]) => ipBatch(n, lines)));
    await Promise.all([...this.plan.config].map(([n, lines]) => ipBatch(n, lines)));
  }

  nsName(ref: NamespaceRef): string {
    const n = this.plan.namespaces;
    if (ref === "node" || ref === "node2" || ref === "external") return n[ref];
    return this.pod(ref).ns;
  }

  pod(name: string): PodPlan {
    const pod = this.plan.pods.find((p) => p.name === name);
    if (!pod) {
      throw new Error(
        `Unknown namespace "${name}": expected node, node2, external or a pod name`,
      );
    }
    return pod;
  }

  exec(
    ref: NamespaceRef,
    cmd: string,
    args: readonly string[],
    opts: { stdin?: string } = {},
  ): Promise<CommandOutput> {
    return denoCommandRunner({
      cmd: "ip",
      args: ["netns", "exec", this.nsName(ref), cmd, ...args],
      ...(opts.stdin !== undefined ? { stdin: opts.stdin } : {}),
    });
  }

  spawn(
    ref: NamespaceRef,
    cmd: string,
    args: readonly string[],
    opts: SpawnOptions = {},
  ): SpawnedProcess {
    const proc = spawnInNamespace(this.nsName(ref), cmd, args, {
      label: `${cmd} in ${ref}`,
      ...opts,
    });
    this.processes.push(proc);
    return proc;
  }

  async startEchoServers(opts: EchoPorts & { readonly pods?: readonly string[] } = {}) {
    const names = opts.pods ?? this.plan.pods.map((p) => p.name);
    await Promise.all(names.map((name) => this.startEchoServer(name, { ...opts, name })));
  }

  async startEchoServer(
    ref: NamespaceRef,
    opts: EchoPorts & { readonly name?: string } = {},
  ): Promise<SpawnedProcess> {
    const name = opts.name ?? ref;
    const proc = this.spawn(ref, Deno.execPath(), [
      "run",
      "--no-config",
      "--allow-net",
      ECHO_SERVER,
      "--name",
      name,
      "--tcp",
      (opts.tcp ?? DEFAULT_TCP).join(","),
      "--udp",
      (opts.udp ?? DEFAULT_UDP).join(","),
    ], { label: `echo ${name} in ${ref}` });
    await proc.waitForOutput(/^ready$/m);
    return proc;
  }

  async probe(req: ProbeRequest): Promise<ProbeAnswer[]> {
    const { from, ...spec } = req;
    const args = ["run", "--no-config", "--allow-net", "--allow-ffi", PROBE, ...probeArgs(spec)];
    const out = await this.exec(from, Deno.execPath(), args);
    if (out.code !== 0) {
      throw new Error(
        `Probe from "${from}" to "${req.to}" exited ${out.code}: ${out.stderr.trim()}`,
      );
    }
    return JSON.parse(out.stdout) as ProbeAnswer[];
  }

  logs(): string {
    return this.processes.map((p) => `--- ${p.label} (pid ${p.pid})\n${p.output()}`).join("\n");
  }

  async destroy(): Promise<void> {
    await Promise.all(this.processes.map((p) => p.kill(1000).catch(() => {})));
    const left = await deleteNamespaces(this.allNamespaces);
    if (left.length > 0) {
      throw new Error(`Cannot delete namespaces ${left.map((n) => `"${n}"`).join(", ")}`);
    }
  }
}
