/** A CommandRunner that runs each command inside one namespace of a test topology. */
import { type CommandRunner, stdinText } from "../../../lib/exec/mod.ts";
import type { Topology } from "../../../scripts/netns/mod.ts";

/** Runs commands in `topo`'s namespace `name` (default the node), stdin pieces joined. */
export function topologyRunner(topo: Topology, name = "node"): CommandRunner {
  return async (input) => {
    const stdin = await stdinText(input);
    return topo.exec(name, input.cmd, input.args, stdin === undefined ? {} : { stdin });
  };
}
