/**
 * What the demo shows that differs by proxy mode: how a service without endpoints answers and
 * which kernel objects are printed after the traffic. One small entry per mode, so a mode's
 * extra output changes in one place.
 */
import type { Topology } from "./netns/mod.ts";

/** The modes `deno task demo -- --proxy-mode MODE` accepts. */
export type DemoMode = "iptables" | "ipvs" | "nftables";

/** One mode's part of the demo. */
export interface DemoModeOutput {
  /** Why a service without endpoints refuses a connection in this mode. */
  readonly noEndpoints: string;
  /** Prints the proxy's kernel objects in the node namespace. */
  show(topo: Topology): Promise<void>;
}

function heading(text: string): void {
  console.log(`\n=== ${text}`);
}

/** Runs `cmd` in the node namespace and prints its output (or its failure, loudly). */
async function print(
  topo: Topology,
  cmd: string,
  args: string[],
  keep: (line: string) => boolean = () => true,
): Promise<void> {
  heading(`${cmd} ${args.join(" ")}`);
  const out = await topo.exec("node", cmd, args);
  if (out.code !== 0) throw new Error(`${cmd} ${args.join(" ")} exited ${out.code}: ${out.stderr}`);
  console.log(out.stdout.split("\n").filter(keep).join("\n").trimEnd());
}

const kubeLine = (l: string) => l.includes("KUBE-");

/** Each mode's output; iptables is the default. */
export const DEMO_MODES: Readonly<Record<DemoMode, DemoModeOutput>> = {
  iptables: {
    noEndpoints: "REJECT rule",
    show: (topo) => print(topo, "iptables-legacy-save", ["-t", "nat"], kubeLine),
  },
  ipvs: {
    noEndpoints: "a virtual server without real servers: the kernel answers ICMP unreachable",
    async show(topo) {
      await print(topo, "ipvsadm", ["-Ln"]);
      // The KUBE- sets with their members (`ipset save` is the compact listing).
      await print(topo, "ipset", ["save"], kubeLine);
      await print(topo, "ip", ["-br", "addr", "show", "dev", "kube-ipvs0"]);
    },
  },
  nftables: {
    noEndpoints: "the no-endpoint-services map's reject",
    show: (topo) => print(topo, "nft", ["list", "table", "ip", "kube-proxy"]),
  },
};

/** Parses the mode a user asked for; throws naming a value that is not a mode. */
export function parseDemoMode(raw: string | undefined): DemoMode {
  const mode = raw ?? "iptables";
  if (mode === "iptables" || mode === "ipvs" || mode === "nftables") return mode;
  throw new RangeError(`Invalid --proxy-mode "${mode}": expected iptables, ipvs or nftables`);
}
