/**
 * Removing the other modes' leftovers at start, only once this mode's own rules are in the
 * kernel. Until then the old mode's rules (left by a stopped kube-proxy of another mode, or of
 * the same mode's upstream) keep routing services; removing them first would leave a moment in
 * which nothing routes them. Why both rule sets may coexist meanwhile is explained at
 * `leftoverModes` in lib/backends/modes.ts.
 */
import { leftoverModes, type ProxyModeName, removeLeftovers } from "../backends/mod.ts";
import type { CommandRunner } from "../exec/mod.ts";
import type { Logger } from "../log/mod.ts";
import type { IPFamily, ProxyState } from "../proxy/mod.ts";

/** What the removal needs: the running mode, the families it syncs, and the kernel seam. */
export interface LeftoverRemovalOptions {
  readonly mode: ProxyModeName;
  readonly families: readonly IPFamily[];
  readonly runner: CommandRunner;
  readonly logger: Logger;
}

/** Runs the removal once, after the first sync that left every family's rules applied. */
export interface LeftoverRemoval {
  /**
   * Called after every sync with the snapshots applied so far (one per family that has
   * succeeded at least once); removes the leftovers the first time every family is there.
   */
  afterSync(applied: readonly ProxyState[]): Promise<void>;
  /** True once the removal has run (whatever it left behind is logged by removeLeftovers). */
  readonly done: boolean;
}

/** Builds the one-shot removal of the other modes' state for `options.mode`. */
export function createLeftoverRemoval(options: LeftoverRemovalOptions): LeftoverRemoval {
  let done = false;
  return {
    get done() {
      return done;
    },
    async afterSync(applied) {
      if (done) return;
      const synced = new Set(applied.map((s) => s.family));
      if (!options.families.every((f) => synced.has(f))) return;
      done = true;
      const modes = leftoverModes(options.mode);
      options.logger.debug(2, "Own rules applied; removing other modes' leftovers", { modes });
      await removeLeftovers(options.mode, options.runner, options.logger);
    },
  };
}
