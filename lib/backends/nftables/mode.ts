/**
 * nftables mode as the app sees it: upstream's start checks (nft ≥ 1.0.1, kernel ≥ 5.13, a
 * checked test table), one proxier per family and `render`.
 */
import { COMMAND_NOT_FOUND, type CommandRunner } from "../../exec/mod.ts";
import type { IPFamily } from "../../proxy/mod.ts";
import { type ModeDefinition, ModeUnavailableError } from "../mode.ts";
import { registerNftablesMetrics } from "./_metrics.ts";
import { createNftablesProxier } from "./proxier.ts";
import { renderNftables } from "./render.ts";
import { nftablesRenderOptions } from "./render_options.ts";
import { nftablesTracer } from "./tracer.ts";
import { fullTransaction } from "./transaction.ts";

/** `nftables v1.0.6 (Lester Gooch #5)` → [1, 0, 6]; null when unreadable. */
export function parseNftVersion(text: string): number[] | null {
  const m = /\bv(\d+)\.(\d+)(?:\.(\d+))?/.exec(text);
  return m ? [Number(m[1]), Number(m[2]), Number(m[3] ?? 0)] : null;
}

/** True when `version` is at least `min` (both [major, minor, patch]). */
function atLeast(version: readonly number[], min: readonly number[]): boolean {
  for (let i = 0; i < min.length; i++) {
    const v = version[i] ?? 0;
    if (v !== min[i]) return v > min[i]!;
  }
  return true;
}

/** What the start checks read besides commands; real defaults. */
export interface NftablesModeOptions {
  /** The kernel release, e.g. `6.1.0-56-amd64`. */
  readonly osRelease?: () => string;
  /** Environment lookup (KUBE_PROXY_NFTABLES_SKIP_KERNEL_VERSION_CHECK skips the kernel check). */
  readonly env?: (name: string) => string | undefined;
}

/** Upstream's (knftables') checks; throws ModeUnavailableError (exit 2) naming what is missing. */
async function checkNftables(runner: CommandRunner, options: NftablesModeOptions): Promise<void> {
  const version = await runner({ cmd: "nft", args: ["--version"] });
  if (version.code === COMMAND_NOT_FOUND) {
    throw new ModeUnavailableError("Cannot use the nftables proxier: nft is not installed", 2);
  }
  const v = parseNftVersion(version.stdout);
  if (v === null || !atLeast(v, [1, 0, 1])) {
    throw new ModeUnavailableError(
      `Cannot use the nftables proxier: nft "${version.stdout.trim()}" is older than v1.0.1`,
      2,
    );
  }
  const env = options.env ?? ((n: string) => Deno.env.get(n));
  if (!env("KUBE_PROXY_NFTABLES_SKIP_KERNEL_VERSION_CHECK")) {
    const release = (options.osRelease ?? (() => Deno.osRelease()))();
    const k = parseNftVersion(`v${release}`);
    if (k === null || !atLeast(k, [5, 13])) {
      throw new ModeUnavailableError(
        `Cannot use the nftables proxier: kernel "${release}" is older than 5.13`,
        2,
      );
    }
  }
  for (const family of ["ip", "ip6"]) {
    const stdin = `add table ${family} kube-proxy { comment "rules for kube-proxy" ; }\n`;
    const out = await runner({ cmd: "nft", args: ["--check", "-f", "-"], stdin });
    if (out.code !== 0) {
      throw new ModeUnavailableError(
        `Cannot use the nftables proxier: "nft --check" of a ${family} table failed: ` +
          out.stderr.trim(),
        2,
      );
    }
  }
}

/** nftables mode, with injectable start-check inputs. */
export function createNftablesMode(options: NftablesModeOptions = {}): ModeDefinition {
  return {
    name: "nftables",
    startMessage: "Using nftables proxy",
    async prepare({ config, runner, logger }) {
      await checkNftables(runner, options);
      // Upstream assumes both families: nftables has no per-family tool to be missing.
      const families: IPFamily[] = ["IPv4", "IPv6"];
      const renderOptions = new Map(families.map((f) => [f, nftablesRenderOptions(config, f)]));
      return {
        families,
        details: {},
        createBackends: (metricsFor) =>
          families.map((family) => {
            const metrics = metricsFor(family);
            const proxier = createNftablesProxier({
              ...renderOptions.get(family),
              family,
              runner,
              logger,
              checkPeriodMs: config.syncPeriodMs,
              metrics: {
                syncFailure: () => metrics.applyFailed(true),
                cleanupFailure: () => metrics.cleanupFailed(),
              },
            });
            return {
              family,
              metrics,
              backend: {
                async sync(state) {
                  const report = await proxier.sync(state);
                  return { full: report.full, counts: report.ruleCounts };
                },
                rulesFlushed: () => proxier.rulesFlushed(),
              },
            };
          }),
      };
    },
    render(config, states) {
      const out: string[] = [];
      for (const state of states) {
        out.push(`# ${state.family}: input for nft -f -`);
        const { model } = renderNftables(state, nftablesRenderOptions(config, state.family));
        out.push(fullTransaction(model).script.trimEnd());
      }
      return out.join("\n") + "\n";
    },
    registerMetrics: registerNftablesMetrics,
    tracer: nftablesTracer,
  };
}

/** nftables mode with real start-check inputs. */
export const nftablesMode: ModeDefinition = createNftablesMode();
