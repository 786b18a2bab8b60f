/**
 * Renders a ProxyState into the nat and filter rules upstream kube-proxy would program.
 * Pure: the result is data that the applier turns into iptables-restore input.
 */
import { type SkippedServicePort, untrustedValue } from "../../proxy/mod.ts";
import type { ProxyState } from "../../proxy/mod.ts";
import {
  KUBE_EXTERNAL_SERVICES,
  KUBE_FIREWALL,
  KUBE_FORWARD,
  KUBE_MARK_MASQ,
  KUBE_NODEPORTS,
  KUBE_POSTROUTING,
  KUBE_PROXY_FIREWALL,
  KUBE_SERVICES,
} from "./chain_names.ts";
import {
  type IptablesRenderOptions,
  type ResolvedRenderConfig,
  resolveRenderConfig,
} from "./render_options.ts";
import {
  kubeForwardAcceptRules,
  kubeMarkMasqRule,
  kubePostroutingRules,
  quoted,
  type RulePart,
} from "../../netfilter/mod.ts";
import { type OwnedLine, RuleBuffers } from "./rule_buffer.ts";
import { renderServicePort } from "./_render_service.ts";
import { CT_STATE_INVALID_DROPPED_COUNTER } from "./nfacct.ts";
import { ChainNameCache } from "./chain_name_cache.ts";

/** Upstream switches to "large cluster mode" (no per-endpoint comments) above this. */
export const LARGE_CLUSTER_ENDPOINTS_THRESHOLD = 1000;

/** What a render yields besides its nat lines: the filter table, chains in use and counts. */
export interface IptablesRenderSummary {
  readonly family: ProxyState["family"];
  /** `:CHAIN - [0:0]` lines of the filter table (all top-level). */
  readonly filterChains: readonly string[];
  /** `-A` lines of the filter table. */
  readonly filterRules: readonly string[];
  /** Every per-service nat chain (SVC/SVL/EXT/FW/SEP) this render uses, written or not. */
  readonly activeNatChains: ReadonlySet<string>;
  /** Rules per table, left-out ones included (kubeproxy_sync_proxy_rules_iptables_total). */
  readonly ruleCounts: { readonly nat: number; readonly filter: number };
  /** Service ports with ETP/ITP Local and no local endpoints, as upstream's gauge. */
  readonly noLocalEndpoints: { readonly internal: number; readonly external: number };
  readonly skipped: readonly SkippedServicePort[];
}

/** The rendered rules of one family, before they are packed into restore input. */
export interface IptablesRuleSet extends IptablesRenderSummary {
  /**
   * nat chain lines; owner = service port key, or null for top-level chains. Service ports
   * the scope left out have no lines here.
   */
  readonly natChains: readonly OwnedLine[];
  /** nat rules in upstream's order; owner as for natChains. */
  readonly natRules: readonly OwnedLine[];
}

/**
 * nat lines per slice of renderIptablesSlices (~40 KB): under a pipe's 64 KB, so each slice is
 * written at once and the render of the next overlaps the restore parsing it. (Deno writes a
 * child's stdin only between turns of the JS thread, so a bigger slice leaves the restore idle
 * once the pipe is drained.)
 */
const NAT_LINES_PER_SLICE = 400;

function writeTopLevel(b: RuleBuffers, config: ResolvedRenderConfig): void {
  for (
    const chain of [
      KUBE_SERVICES,
      KUBE_EXTERNAL_SERVICES,
      KUBE_FORWARD,
      KUBE_NODEPORTS,
      KUBE_PROXY_FIREWALL,
    ]
  ) {
    b.filterChain(chain);
  }
  for (const chain of [KUBE_SERVICES, KUBE_NODEPORTS, KUBE_POSTROUTING, KUBE_MARK_MASQ]) {
    b.natChain(null, chain);
  }
  const mark = config.masqueradeMark;
  for (const rule of kubePostroutingRules(mark, config.randomFully)) b.nat(null, ...rule);
  b.nat(null, ...kubeMarkMasqRule(mark));

  if (config.localhostNodePorts) {
    // route_localnet opens a hole (kubernetes/kubernetes#90259) that this copy of kubelet's
    // rule closes.
    b.filterChain(KUBE_FIREWALL);
    b.filter(
      "-A",
      KUBE_FIREWALL,
      "-m",
      "comment",
      "--comment",
      quoted("block incoming localnet connections"),
      "-d",
      "127.0.0.0/8",
      "!",
      "-s",
      "127.0.0.0/8",
      "-m",
      "conntrack",
      "!",
      "--ctstate",
      "RELATED,ESTABLISHED,DNAT",
      "-j",
      "DROP",
    );
  }
}

function writeTail(b: RuleBuffers, config: ResolvedRenderConfig): void {
  const nodePortsComment = quoted(
    "kubernetes service nodeports; NOTE: this must be the last rule in this chain",
  );
  // One jump to KUBE-NODEPORTS per NodePort destination: every local address, or each bound IP.
  let destinations: RulePart[];
  if (config.nodePortIPs === null) {
    const local = ["-m", "addrtype", "--dst-type", "LOCAL"];
    if (config.family === "IPv6") local.push("!", "-d", "::1/128");
    else if (!config.localhostNodePorts) local.push("!", "-d", "127.0.0.0/8");
    destinations = [local];
  } else {
    destinations = config.nodePortIPs.map((ip) => ["-d", ip]);
  }
  for (const destination of destinations) {
    b.nat(
      null,
      "-A",
      KUBE_SERVICES,
      "-m",
      "comment",
      "--comment",
      nodePortsComment,
      destination,
      "-j",
      KUBE_NODEPORTS,
    );
  }

  if (!config.conntrackTCPLiberal) {
    // Drop INVALID packets, which could otherwise reset connections (upstream's rule, counted
    // into its nfacct object when the node has it).
    const counted = config.countInvalidDropped
      ? ["-m", "nfacct", "--nfacct-name", CT_STATE_INVALID_DROPPED_COUNTER]
      : [];
    b.filter("-A", KUBE_FORWARD, "-m", "conntrack", "--ctstate", "INVALID", counted, "-j", "DROP");
  }
  for (const rule of kubeForwardAcceptRules(config.masqueradeMark)) b.filter(...rule);
}

/** Which service ports of a render get their own chains written (a partial sync's choice). */
export interface IptablesRenderScope {
  /**
   * Whether to write the own chains of service port `key`, which are named `chains`; default
   * all. Left-out service ports still get their top-level rules and are still counted.
   */
  readonly writeServiceChains?: (key: string, chains: readonly string[]) => boolean;
}

/** Renders every rule of one family; service ports are visited in sorted key order. */
export function renderIptables(
  state: ProxyState,
  options: IptablesRenderOptions = {},
  scope: IptablesRenderScope = {},
): IptablesRuleSet {
  const buffers = new RuleBuffers();
  const done = renderInto(buffers, state, options, scope, false).next();
  if (!done.done) throw new Error("renderInto yielded without slices asked for");
  return { ...done.value, natChains: buffers.natChains, natRules: buffers.natRules };
}

/**
 * The same render, yielding the nat lines as it goes: each slice holds the chain declarations
 * then the rules of a run of service ports (top-level ones first, the NodePort jump last), so
 * each chain is declared before any rule names it, and every chain gets its rules in the same
 * order as renderIptables writes them. Returns the rest once every slice is out.
 */
export function* renderIptablesSlices(
  state: ProxyState,
  options: IptablesRenderOptions = {},
  scope: IptablesRenderScope = {},
): Generator<OwnedLine[], IptablesRenderSummary> {
  return yield* renderInto(new RuleBuffers(), state, options, scope, true);
}

function* renderInto(
  buffers: RuleBuffers,
  state: ProxyState,
  options: IptablesRenderOptions,
  scope: IptablesRenderScope,
  slices: boolean,
): Generator<OwnedLine[], IptablesRenderSummary> {
  const config = resolveRenderConfig(state, options);
  writeTopLevel(buffers, config);

  const ctx = {
    config,
    buffers,
    chainNames: options.chainNames ?? new ChainNameCache(),
    largeClusterMode: state.totalEndpoints > LARGE_CLUSTER_ENDPOINTS_THRESHOLD,
    writeServiceChains: scope.writeServiceChains ?? (() => true),
  };
  const active = new Set<string>();
  const skipped: SkippedServicePort[] = [];
  let internal = 0;
  let external = 0;
  let omittedNatRules = 0;
  let natRules = 0;
  const take = () => {
    natRules += buffers.natRules.length;
    return buffers.takeNat();
  };
  for (const key of [...state.services.keys()].sort()) {
    const sps = state.services.get(key)!;
    const reason = untrustedValue(sps, state.family);
    if (reason !== null) {
      skipped.push({ key, reason });
      continue;
    }
    const result = renderServicePort(ctx, key, sps);
    for (const chain of result.chains) active.add(chain);
    omittedNatRules += result.omittedNatRules;
    if (result.noLocalEndpointsInternal) internal++;
    if (result.noLocalEndpointsExternal) external++;
    if (slices && buffers.natChains.length + buffers.natRules.length >= NAT_LINES_PER_SLICE) {
      yield take();
    }
  }

  writeTail(buffers, config);
  if (slices) yield take();
  else natRules = buffers.natRules.length;
  return {
    family: state.family,
    filterChains: buffers.filterChains,
    filterRules: buffers.filterRules,
    activeNatChains: active,
    ruleCounts: {
      // Every nat line the writers emit is an `-A` rule; left-out ones were counted instead.
      nat: natRules + omittedNatRules,
      filter: buffers.filterRules.length,
    },
    noLocalEndpoints: { internal, external },
    skipped,
  };
}
