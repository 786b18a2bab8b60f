/**
 * IPVS mode's iptables rules (upstream's writeIptablesRules), as `iptables-restore --noflush`
 * input: every KUBE chain of the mode is redeclared, so rewritten whole. Rules matching a set
 * are left out while the set is empty, except the KUBE-IPVS-FILTER ones and the health check
 * rule, which upstream writes unconditionally.
 */
import { linesText } from "../common/mod.ts";
import {
  hasJump,
  joinRule,
  jumpInsertLine,
  type JumpRule,
  kubeForwardAcceptRules,
  kubeMarkMasqRule,
  kubePostroutingRules,
  quoted,
  type RulePart,
  type SavedTable,
} from "../../netfilter/mod.ts";
import type { IpvsDesiredState } from "./_desired_state.ts";
import { IPSET, ipsetName, ipsetSpec } from "./_ipset_specs.ts";

/** nat chains of IPVS mode, in upstream's declaration order. */
export const IPVS_NAT_CHAINS: readonly string[] = [
  "KUBE-SERVICES",
  "KUBE-POSTROUTING",
  "KUBE-NODE-PORT",
  "KUBE-LOAD-BALANCER",
  "KUBE-MARK-MASQ",
];

/** filter chains of IPVS mode, in upstream's declaration order. */
export const IPVS_FILTER_CHAINS: readonly string[] = [
  "KUBE-FORWARD",
  "KUBE-NODE-PORT",
  "KUBE-PROXY-FIREWALL",
  "KUBE-SOURCE-RANGES-FIREWALL",
  "KUBE-IPVS-FILTER",
  "KUBE-IPVS-OUT-FILTER",
];

function jump(table: "filter" | "nat", src: string, dst: string, comment: string): JumpRule {
  return { table, srcChain: src, dstChain: dst, comment, extraArgs: [] };
}

/** Upstream's iptablesJumpChain for IPVS mode (OUTPUT → KUBE-IPVS-OUT-FILTER since 1.29). */
export const IPVS_JUMP_CHAINS: readonly JumpRule[] = [
  jump("nat", "OUTPUT", "KUBE-SERVICES", "kubernetes service portals"),
  jump("nat", "PREROUTING", "KUBE-SERVICES", "kubernetes service portals"),
  jump("nat", "POSTROUTING", "KUBE-POSTROUTING", "kubernetes postrouting rules"),
  jump("filter", "FORWARD", "KUBE-FORWARD", "kubernetes forwarding rules"),
  jump("filter", "INPUT", "KUBE-NODE-PORT", "kubernetes health check rules"),
  jump("filter", "INPUT", "KUBE-PROXY-FIREWALL", "kube-proxy firewall rules"),
  jump("filter", "FORWARD", "KUBE-PROXY-FIREWALL", "kube-proxy firewall rules"),
  jump("filter", "INPUT", "KUBE-IPVS-FILTER", "kubernetes ipvs access filter"),
  jump("filter", "OUTPUT", "KUBE-IPVS-OUT-FILTER", "kubernetes ipvs access filter"),
];

/** The IPVS jumps that `iptables-save` tables lack (all of them for unknown tables). */
export function missingIpvsJumps(tables: ReadonlyMap<string, SavedTable>): JumpRule[] {
  return IPVS_JUMP_CHAINS.filter((j) => !hasJump(tables.get(j.table), j));
}

/** A set-matching rule of upstream's ipsetWithIptablesChain table. */
interface SetJump {
  readonly set: string;
  readonly table: "nat" | "filter";
  readonly from: string;
  readonly to: string;
  readonly match: string;
  readonly protocol: string;
}

function sj(
  set: string,
  table: "nat" | "filter",
  from: string,
  to: string,
  match: string,
  protocol = "",
): SetJump {
  return { set, table, from, to, match, protocol };
}

const SET_JUMPS: readonly SetJump[] = [
  sj(IPSET.loopBack, "nat", "KUBE-POSTROUTING", "MASQUERADE", "dst,dst,src"),
  sj(IPSET.loadBalancer, "nat", "KUBE-SERVICES", "KUBE-LOAD-BALANCER", "dst,dst"),
  sj(IPSET.loadBalancerLocal, "nat", "KUBE-LOAD-BALANCER", "RETURN", "dst,dst"),
  sj(IPSET.nodePortLocalTCP, "nat", "KUBE-NODE-PORT", "RETURN", "dst", "tcp"),
  sj(IPSET.nodePortTCP, "nat", "KUBE-NODE-PORT", "KUBE-MARK-MASQ", "dst", "tcp"),
  sj(IPSET.nodePortLocalUDP, "nat", "KUBE-NODE-PORT", "RETURN", "dst", "udp"),
  sj(IPSET.nodePortUDP, "nat", "KUBE-NODE-PORT", "KUBE-MARK-MASQ", "dst", "udp"),
  sj(IPSET.nodePortLocalSCTP, "nat", "KUBE-NODE-PORT", "RETURN", "dst,dst", "sctp"),
  sj(IPSET.nodePortSCTP, "nat", "KUBE-NODE-PORT", "KUBE-MARK-MASQ", "dst,dst", "sctp"),
  sj(
    IPSET.loadBalancerFW,
    "filter",
    "KUBE-PROXY-FIREWALL",
    "KUBE-SOURCE-RANGES-FIREWALL",
    "dst,dst",
  ),
  sj(
    IPSET.loadBalancerSourceCIDR,
    "filter",
    "KUBE-SOURCE-RANGES-FIREWALL",
    "RETURN",
    "dst,dst,src",
  ),
  sj(IPSET.loadBalancerSourceIP, "filter", "KUBE-SOURCE-RANGES-FIREWALL", "RETURN", "dst,dst,src"),
];

/** The rendered rules of one family, before packing. */
export interface IpvsIptablesRules {
  readonly natRules: readonly string[];
  readonly filterRules: readonly string[];
}

/** What the rules depend on: the config, which sets are empty, the LB addresses to drop. */
export type IpvsRuleInputs = Pick<IpvsDesiredState, "family" | "config" | "lbNoNodeAccess"> & {
  readonly ipsets: ReadonlyMap<string, { readonly size: number }>;
};

/** Writes the rules for a desired state in upstream's order. */
export function renderIpvsIptablesRules(desired: IpvsRuleInputs): IpvsIptablesRules {
  const { config, family } = desired;
  const nat: string[] = [];
  const filter: string[] = [];
  const empty = (set: string) => (desired.ipsets.get(set)?.size ?? 0) === 0;
  const name = (set: string) => ipsetName(set, family);
  const comment = (
    set: string,
  ): RulePart => ["-m", "comment", "--comment", quoted(ipsetSpec(set).comment)];
  const matchSet = (
    set: string,
    match: string,
  ): RulePart => ["-m", "set", "--match-set", name(set), match];
  const mark = config.masqueradeMark;

  nat.push(
    joinRule([
      "-A",
      "KUBE-SERVICES",
      "-s",
      family === "IPv6" ? "::1/128" : "127.0.0.0/8",
      "-j",
      "RETURN",
    ]),
  );
  for (const j of SET_JUMPS) {
    if (empty(j.set)) continue;
    const proto = j.protocol === "" ? [] : ["-p", j.protocol];
    const line = joinRule([
      "-A",
      j.from,
      proto,
      comment(j.set),
      matchSet(j.set, j.match),
      "-j",
      j.to,
    ]);
    (j.table === "nat" ? nat : filter).push(line);
  }
  if (!empty(IPSET.clusterIP)) {
    const base: RulePart[] = ["-A", "KUBE-SERVICES", comment(IPSET.clusterIP)];
    const masq = ["-j", "KUBE-MARK-MASQ"];
    if (config.masqueradeAll) {
      nat.push(joinRule([...base, matchSet(IPSET.clusterIP, "dst,dst"), masq]));
    } else if (config.ifNotLocal !== null) {
      nat.push(joinRule([...base, matchSet(IPSET.clusterIP, "dst,dst"), config.ifNotLocal, masq]));
    } else nat.push(joinRule([...base, matchSet(IPSET.clusterIP, "src,dst"), masq]));
  }
  const externalIPRules = (args: RulePart[]) => {
    nat.push(
      joinRule([
        ...args,
        "-m",
        "physdev",
        "!",
        "--physdev-is-in",
        "-m",
        "addrtype",
        "!",
        "--src-type",
        "LOCAL",
        "-j",
        "ACCEPT",
      ]),
    );
    nat.push(joinRule([...args, "-m", "addrtype", "--dst-type", "LOCAL", "-j", "ACCEPT"]));
  };
  for (const set of [IPSET.externalIP, IPSET.externalIPLocal]) {
    if (empty(set)) continue;
    const args: RulePart[] = ["-A", "KUBE-SERVICES", comment(set), matchSet(set, "dst,dst")];
    if (set === IPSET.externalIP) nat.push(joinRule([...args, "-j", "KUBE-MARK-MASQ"]));
    externalIPRules(args);
  }
  nat.push("-A KUBE-SERVICES -m addrtype --dst-type LOCAL -j KUBE-NODE-PORT");
  nat.push("-A KUBE-LOAD-BALANCER -j KUBE-MARK-MASQ");
  filter.push("-A KUBE-SOURCE-RANGES-FIREWALL -j DROP");
  for (const e of desired.lbNoNodeAccess) {
    filter.push(
      joinRule([
        "-A",
        "KUBE-IPVS-OUT-FILTER",
        "-s",
        e.ip,
        "-m",
        "ipvs",
        "--vaddr",
        e.ip,
        "--vproto",
        e.protocol,
        "--vport",
        String(e.port),
        "-j",
        "DROP",
      ]),
    );
  }
  for (const set of [IPSET.clusterIP, IPSET.loadBalancer]) {
    if (!empty(set)) {
      nat.push(joinRule(["-A", "KUBE-SERVICES", matchSet(set, "dst,dst"), "-j", "ACCEPT"]));
    }
  }
  filter.push(...kubeForwardAcceptRules(mark).map(joinRule));
  filter.push(
    joinRule([
      "-A",
      "KUBE-NODE-PORT",
      comment(IPSET.healthCheckNodePort),
      matchSet(IPSET.healthCheckNodePort, "dst"),
      "-j",
      "ACCEPT",
    ]),
  );
  for (
    const set of [IPSET.loadBalancer, IPSET.clusterIP, IPSET.externalIP, IPSET.externalIPLocal]
  ) {
    filter.push(joinRule(["-A", "KUBE-IPVS-FILTER", matchSet(set, "dst,dst"), "-j", "RETURN"]));
  }
  filter.push(
    joinRule([
      "-A",
      "KUBE-IPVS-FILTER",
      matchSet(IPSET.healthCheckNodePort, "dst"),
      "-j",
      "RETURN",
    ]),
  );
  filter.push(
    joinRule([
      "-A",
      "KUBE-IPVS-FILTER",
      "-m",
      "conntrack",
      "--ctstate",
      "NEW",
      matchSet(IPSET.ipvsIPs, "dst"),
      "-j",
      "REJECT",
    ]),
  );
  nat.push(...kubePostroutingRules(mark, config.randomFully).map(joinRule));
  nat.push(joinRule(kubeMarkMasqRule(mark)));
  return { natRules: nat, filterRules: filter };
}

/**
 * The restore input: nat then filter (upstream's order), each chain declared, then the rules,
 * then `-I` lines for the jumps from built-in chains that `hasJump` says are missing.
 */
export function buildIpvsRestoreInput(
  rules: IpvsIptablesRules,
  missingJumps: readonly JumpRule[] = IPVS_JUMP_CHAINS,
): string {
  const out: string[] = ["*nat"];
  for (const c of IPVS_NAT_CHAINS) out.push(`:${c} - [0:0]`);
  out.push(...rules.natRules);
  for (const j of missingJumps) if (j.table === "nat") out.push(jumpInsertLine(j));
  out.push("COMMIT", "*filter");
  for (const c of IPVS_FILTER_CHAINS) out.push(`:${c} - [0:0]`);
  out.push(...rules.filterRules);
  for (const j of missingJumps) if (j.table === "filter") out.push(jumpInsertLine(j));
  out.push("COMMIT");
  return linesText(out);
}
