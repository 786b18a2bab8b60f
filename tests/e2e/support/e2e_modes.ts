/**
 * What the real-kernel tests need to know about each proxy mode: the tools it must find on the
 * node (missing ones fail loudly), what to dump when a case fails, and which binary's failure
 * is an apply failure (for fault injection).
 */
import type { ProxyModeName } from "../../../lib/backends/mod.ts";
import type { Topology } from "../../../scripts/netns/mod.ts";

/** One mode as the e2e tests drive it. */
export interface E2EModeSupport {
  readonly mode: ProxyModeName;
  /** Two letters that start every network-namespace prefix of this mode's flow tests. */
  readonly tag: string;
  /** Binaries the mode runs on the node. */
  readonly commands: readonly string[];
  /** The binary that applies a sync, and a shell `case` pattern of the arguments of an apply. */
  readonly apply: { readonly binary: string; readonly argsPattern: string };
  /** What the mode programmed in the node namespace, as the mode's own tools print it. */
  readonly dumpCommands: readonly (readonly string[])[];
}

/** Every mode's e2e support. */
export const E2E_MODES: Readonly<Record<ProxyModeName, E2EModeSupport>> = {
  iptables: {
    mode: "iptables",
    tag: "kp",
    commands: ["iptables-legacy", "iptables-legacy-save", "iptables-legacy-restore"],
    apply: { binary: "iptables-legacy-restore", argsPattern: "*" },
    dumpCommands: [["iptables-legacy-save"]],
  },
  ipvs: {
    mode: "ipvs",
    tag: "kv",
    commands: ["ipvsadm", "ipset", "iptables-legacy-restore"],
    apply: { binary: "ipvsadm", argsPattern: "*-R*" },
    dumpCommands: [["ipvsadm", "-Ln"], ["ipset", "list"], ["iptables-legacy-save"]],
  },
  nftables: {
    mode: "nftables",
    tag: "kn",
    commands: ["nft"],
    apply: { binary: "nft", argsPattern: "*-f*" },
    dumpCommands: [["nft", "list", "ruleset"]],
  },
};

/** The dump of what `support`'s mode programmed on the node, for a failing test's output. */
export async function dumpModeState(topo: Topology, support: E2EModeSupport): Promise<string> {
  const out: string[] = [];
  for (const [cmd, ...args] of support.dumpCommands) {
    const r = await topo.exec("node", cmd!, args);
    out.push(`--- ${[cmd, ...args].join(" ")} (exit ${r.code})`, r.stdout, r.stderr);
  }
  return out.join("\n");
}
