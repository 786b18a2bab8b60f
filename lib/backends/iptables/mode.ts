/**
 * iptables mode as the app sees it: start checks (which iptables the node uses, which families
 * work), the render options taken from the configuration and `render`.
 */
import { type CommandRunner, ensureSysctl } from "../../exec/mod.ts";
import type { Logger } from "../../log/mod.ts";
import { ipCommandAddressLister } from "../../net/mod.ts";
import type { ModeDefinition } from "../mode.ts";
import { detectIptablesFlavour, usableFamilies } from "../../netfilter/mod.ts";
import { requireIptables } from "../common/mod.ts";
import { registerIptablesMetrics } from "./metrics.ts";
import { createIptablesProxier } from "./proxier.ts";
import { createNfacctClient, NFACCT_COUNTERS, probeNfacct } from "./nfacct.ts";
import { iptablesRenderOptions } from "./render_options.ts";
import { iptablesTracer } from "./tracer.ts";
import { renderFullRestore } from "./restore_payload.ts";

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
  registerMetrics: registerIptablesMetrics,
  tracer: iptablesTracer,
};
