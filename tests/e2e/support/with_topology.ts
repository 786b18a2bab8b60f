/**
 * The frame every real-kernel test runs in: a fresh topology and a manifest folder named after
 * its prefix; on failure the topology's process logs are printed, and both are always removed.
 */
import {
  createTopology,
  type NodeIptablesFlavour,
  type Topology,
  type TopologyOptions,
} from "../../../scripts/netns/mod.ts";
import { ManifestDir, requireRealKernel } from "./proxy_process.ts";

/** A topology plus the iptables flavour the machine must have for it (default legacy). */
export interface TopologyScenario extends TopologyOptions {
  readonly flavour?: NodeIptablesFlavour;
  /** More binaries the test needs on the node (a mode's tools); missing ones fail loudly. */
  readonly requireCommands?: readonly string[];
}

/** What the body works with. */
export interface TopologyContext {
  readonly topo: Topology;
  readonly dir: ManifestDir;
}

/** Runs `body` in a fresh topology with an empty manifest folder, then tears both down. */
export async function withTopology(
  scenario: TopologyScenario,
  body: (ctx: TopologyContext) => Promise<void>,
): Promise<void> {
  const { flavour, requireCommands = [], ...options } = scenario;
  await requireRealKernel(flavour, requireCommands);
  const topo = await createTopology(options);
  const dir = await ManifestDir.create(options.prefix);
  try {
    await body({ topo, dir });
  } catch (err) {
    console.error(topo.logs());
    throw err;
  } finally {
    await topo.destroy();
    await dir.remove();
  }
}
