/**
 * iptables mode as the app sees it: start checks (which iptables the node uses, which families
 * work), the render options taken from the configuration, `render` and `--cleanup`.
 */
import { type CommandRunner, ensureSysctl } from "../../exec/mod.ts";
import type { Logger } from "../../log/mod.ts";
import { ipCommandAddressLister } from "../../net/mod.ts";
import type { IPFamily } from "../../proxy/mod.ts";
import { type ModeDefinition, ModeUnavailableError } from "../mod.ts";
import { cleanupIptables } from "./cleanup.ts";
import { detectIptablesFlavour, iptablesBinaries, type IptablesFlavour } from "./flavour.ts";
import { registerIptablesMetrics } from "./metrics.ts";
import { createIptablesProxier } from "./proxier.ts";
import { createNfacctClient, NFACCT_COUNTERS, probeNfacct } from "./nfacct.ts";
import { iptablesRenderOptions } from "./render_options.ts";
import { iptablesTracer } from "./tracer.ts";
import { renderFullRestore } from "./restore_payload.ts";

/**
 * Whether the nat table of a family and flavour can be read here, reading as little as
 * possible: legacy's `iptables-save -t nat` up to its first line (the fetch is of nat only);
 * with nft, `iptables -t nat -S POSTROUTING`, which fetches that one chain, where
 * iptables-nft-save fetches every table first (slow with a large nat table).
 */
async function natReadable(
  runner: CommandRunner,
  family: IPFamily,
  flavour: IptablesFlavour,
): Promise<{ ok: boolean; stderr: string }> {
  const bins = iptablesBinaries(family, flavour);
  const out = flavour === "nft"
    ? await runner({ cmd: bins.iptables, args: ["-t", "nat", "-S", "POSTROUTING"] })
    : await runner({ cmd: bins.save, args: ["-t", "nat"], stdoutUntil: () => true });
  return { ok: out.code === 0, stderr: out.stderr };
}

/** The families to proxy: IPv4 always, IPv6 when ip6tables works on this node. */
export async function usableFamilies(
  runner: CommandRunner,
  flavour: IptablesFlavour,
): Promise<IPFamily[]> {
  return (await natReadable(runner, "IPv6", flavour)).ok ? ["IPv4", "IPv6"] : ["IPv4"];
}

/**
 * Fails with exit code 2 unless some iptables flavour can be run here (IPVS mode needs it too).
 * nft is tried first: reading a legacy table that does not exist makes the kernel create it,
 * and a legacy nat table on an nft node makes iptables-nft warn about legacy tables present.
 */
export async function requireIptables(runner: CommandRunner): Promise<void> {
  const stderr: string[] = [];
  for (const flavour of ["nft", "legacy"] as const) {
    const out = await natReadable(runner, "IPv4", flavour);
    if (out.ok) return;
    stderr.push(out.stderr.trim());
  }
  throw new ModeUnavailableError(`Cannot run iptables: ${stderr.find((s) => s) ?? ""}`, 2);
}

/**
 * Localhost NodePorts need `route_localnet=1` so 127.0.0.1 traffic can be DNATed off the
 * loopback device (upstream sets it when localhostNodePorts is on); a refusal only warns.
 */
export async function enableRouteLocalnet(runner: CommandRunner, logger: Logger): Promise<void> {
  await ensureSysctl(runner, "net.ipv4.conf.all.route_localnet", 1, logger);
}

/** iptables mode: one proxier per family, all with the flavour the node uses. */
export const iptablesMode: ModeDefinition = {
  name: "iptables",
  startMessage: "Using iptables proxy",
  async prepare({ config, runner, logger }) {
    await requireIptables(runner);
    const flavour = await detectIptablesFlavour(runner);
    const families = await usableFamilies(runner, flavour);
    const options = new Map(families.map((f) => [f, iptablesRenderOptions(config, f)]));
    if (families.includes("IPv4") && config.iptables.localhostNodePorts) {
      await enableRouteLocalnet(runner, logger);
    }
    const nfacct = createNfacctClient(runner, logger);
    const hasNfacct = await probeNfacct(nfacct, logger);
    return {
      families,
      details: { flavour, nfacct: hasNfacct },
      ...(hasNfacct
        ? {
          packetCounters: {
            read: async () =>
              new Map([...await nfacct.list()].map(([name, c]) => [name, c.packets])),
          },
        }
        : {}),
      createBackends: (metricsFor) =>
        families.map((family) => {
          const metrics = metricsFor(family);
          const backend = createIptablesProxier({
            ...options.get(family),
            family,
            flavour,
            runner,
            logger,
            metrics,
            listLocalAddresses: ipCommandAddressLister(runner),
            ...(hasNfacct ? { ensureNfacct: () => nfacct.ensure(NFACCT_COUNTERS) } : {}),
          });
          return { family, backend, metrics };
        }),
    };
  },
  render(config, states) {
    const out: string[] = [];
    for (const state of states) {
      const cmd = state.family === "IPv4" ? "iptables-restore" : "ip6tables-restore";
      out.push(`# ${state.family}: input for ${cmd} --noflush`);
      out.push(renderFullRestore(state, iptablesRenderOptions(config, state.family)).trimEnd());
    }
    return out.join("\n") + "\n";
  },
  cleanup: cleanupIptables,
  registerMetrics: registerIptablesMetrics,
  tracer: iptablesTracer,
};
