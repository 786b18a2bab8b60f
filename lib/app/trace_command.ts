/**
 * `deno-kube-proxy trace`: where does this packet go on this node, and do the node's rules
 * still say what the cluster state says? Reads the state from --manifests or the API server,
 * the rules from the kernel (read-only commands) or, with --rendered, from the mode's own
 * rendering, and compares the mode's tracer with the reference model. Never writes.
 */
import type { ProxyConfig, TraceRequest } from "../config/mod.ts";
import type { CommandRunner } from "../exec/mod.ts";
import { errorMessage, type Logger } from "../log/mod.ts";
import { ipCommandAddressLister, isLoopbackIP, type LocalAddressLister } from "../net/mod.ts";
import { createProxyTracker, type IPFamily, type ProxyState } from "../proxy/mod.ts";
import {
  describeDecision,
  differences,
  inCIDR,
  modelDecision,
  type ModelOptions,
  modelOptions,
  type TraceDecision,
  type TracePacket,
  type TraceResult,
  type TraceSource,
} from "../trace/mod.ts";
import { loadMode } from "../backends/mod.ts";
import { CommandFailure } from "./command_failure.ts";
import { loadManifestState } from "./initial_state.ts";
import { trackerSettings } from "./tracker_settings.ts";
import { createStateSource } from "./state_source.ts";

/** Exit code when the node's rules disagree with the cluster state. */
export const TRACE_DISAGREES = 3;

/** Seams of traceCommand; real by default. */
export interface TraceCommandOptions {
  readonly runner: CommandRunner;
  readonly logger: Logger;
  readonly listLocalAddresses?: LocalAddressLister;
  /** The cluster state of one family; default --manifests, else the API server. */
  readonly loadState?: (config: ProxyConfig, family: IPFamily) => Promise<ProxyState>;
}

/** What trace prints, and its exit code. */
export interface TraceOutcome {
  readonly code: 0 | typeof TRACE_DISAGREES;
  readonly text: string;
}

async function stateFromApi(
  config: ProxyConfig,
  family: IPFamily,
  logger: Logger,
): Promise<ProxyState> {
  const tracker = createProxyTracker({
    ...trackerSettings(config),
    nodeName: config.hostnameOverride,
  });
  const factory = createStateSource(config, logger, { postStartingEvent: false });
  const abort = new AbortController();
  const source = factory({
    onEvent: (e) => tracker.handleEvent(e),
    onSynced: (k) => tracker.markSynced(k),
  });
  const running = source.start(abort.signal);
  const deadline = Date.now() + 60_000;
  while (!tracker.isSynced() && Date.now() < deadline) {
    await new Promise((r) => setTimeout(r, 100));
  }
  abort.abort();
  await running;
  if (!tracker.isSynced()) {
    throw new CommandFailure("Cannot trace: the API server did not list Services within 60s", 2);
  }
  return tracker.snapshot(family);
}

/** The default state loader: --manifests once, or one list from the API server. */
export async function loadTraceState(
  config: ProxyConfig,
  family: IPFamily,
  logger: Logger,
): Promise<ProxyState> {
  if (config.manifests === "") return await stateFromApi(config, family, logger);
  const tracker = await loadManifestState(
    config.manifests,
    config.hostnameOverride,
    trackerSettings(config),
    logger,
  );
  return tracker.snapshot(family);
}

/**
 * Where a packet from `from` enters when --source is not given: the node's own address, a pod
 * (inside the local-traffic detector's CIDR, or any address when there is none), or outside.
 */
export function inferSource(from: string, options: ModelOptions): TraceSource {
  if (options.localAddresses.includes(from)) return "node";
  const pods = options.podTraffic;
  if (pods !== null && pods !== "interface") return inCIDR(pods.cidr, from) ? "pod" : "external";
  return "pod";
}

function formatText(
  request: TraceRequest,
  packet: TracePacket,
  where: string,
  result: TraceResult,
  expected: TraceDecision,
  diffs: readonly string[],
): string {
  const lines = [
    `packet:   ${request.protocol} ${request.from} -> ${request.to}:${request.port} from ${
      packet.source === "external" ? "outside the node" : `a ${packet.source}`
    }${request.source === "auto" ? " (told from --from; --source to choose)" : ""}`,
    `rules:    ${where}`,
    `decision: ${describeDecision(result.decision)}`,
  ];
  if (result.decision.kind === "forward") {
    for (const e of result.decision.endpoints) {
      lines.push(`          ${e.address.padEnd(28)} ${(e.probability * 100).toFixed(1)}%`);
    }
  }
  lines.push(`path:     ${result.path.length === 0 ? "(none)" : result.path.join(" -> ")}`);
  if (diffs.length === 0) {
    lines.push("the rules agree with the cluster state");
  } else {
    lines.push(
      `the rules DISAGREE with the cluster state, which says: ${describeDecision(expected)}`,
    );
    for (const d of diffs) lines.push(`  - ${d}`);
  }
  return lines.join("\n") + "\n";
}

/** Runs `trace`; CommandFailure(1) for bad input, CommandFailure(2) when rules cannot be read. */
export async function traceCommand(
  config: ProxyConfig,
  request: TraceRequest,
  options: TraceCommandOptions,
): Promise<TraceOutcome> {
  const { runner, logger } = options;
  const { tracer } = await loadMode(config.mode);
  const state = await (options.loadState ?? ((c, f) => loadTraceState(c, f, logger)))(
    config,
    request.family,
  );
  let local: readonly string[] = [];
  if (!request.rendered) {
    const lister = options.listLocalAddresses ?? ipCommandAddressLister(runner);
    try {
      local = await lister(request.family);
    } catch (err) {
      throw new CommandFailure(`Cannot list the node's addresses: ${errorMessage(err)}`, 2);
    }
  }
  // Loopback and link-local addresses exist on every node and carry no service traffic.
  const nodeAddresses = [...state.node.ips, ...local].filter((ip) =>
    !isLoopbackIP(ip) && !/^fe[89ab][0-9a-f]:/i.test(ip)
  );
  if (nodeAddresses.length === 0) {
    const other = request.family === "IPv4" ? "IPv6" : "IPv4";
    throw new CommandFailure(
      `Invalid --to "${request.to}": the node has no ${request.family} address; expected an ${other} address`,
      1,
    );
  }
  const opts = modelOptions(config, state, local);
  const packet: TracePacket = {
    family: request.family,
    from: request.from,
    protocol: request.protocol,
    to: request.to,
    port: request.port,
    source: request.source === "auto" ? inferSource(request.from, opts) : request.source,
  };
  let rules;
  try {
    if (request.rendered) {
      rules = tracer.rendered(config, state);
    } else {
      // What the kernel cannot hold (IPVS keeps no service names) comes from the cluster state.
      const read = await tracer.read(runner, request.family);
      rules = tracer.withClusterState?.(read, config, state) ?? read;
    }
  } catch (err) {
    throw new CommandFailure(`Cannot read the ${config.mode} rules: ${errorMessage(err)}`, 2);
  }
  let result: TraceResult;
  try {
    result = tracer.trace(rules, packet, { localAddresses: opts.localAddresses });
  } catch (err) {
    throw new CommandFailure(`Cannot trace: ${errorMessage(err)}`, 2);
  }
  const expected = modelDecision(state, packet, opts);
  const diffs = differences(result.decision, expected);
  const where = request.rendered
    ? `what ${config.mode} mode renders for the cluster state`
    : `${config.mode} rules read from the kernel`;
  const text = request.output === "json"
    ? JSON.stringify(
      {
        packet,
        mode: config.mode,
        rules: request.rendered ? "rendered" : "kernel",
        decision: result.decision,
        path: result.path,
        expected,
        agree: diffs.length === 0,
        differences: diffs,
      },
      null,
      2,
    ) + "\n"
    : formatText(request, packet, where, result, expected, diffs);
  return { code: diffs.length === 0 ? 0 : TRACE_DISAGREES, text };
}
