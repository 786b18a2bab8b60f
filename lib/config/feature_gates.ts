/**
 * Feature gates as kube-proxy v1.34 treats them: every gate the binary registers is known, an
 * unknown one is an error, a gate locked to its default cannot be set to the other value, and
 * AllAlpha/AllBeta set every alpha/beta gate not named on its own. On top of upstream's rules,
 * a gate whose non-default value would change what kube-proxy does in a way this program does
 * not implement is refused, so no setting is accepted and then ignored.
 */
import { FEATURE_GATE_LINES } from "./_feature_gate_list.ts";

/** A gate's maturity, as upstream's prerelease field names it. */
export type FeatureStage = "Alpha" | "Beta" | "GA" | "Deprecated";

/** One gate's state at version 1.34. */
export interface FeatureGateSpec {
  readonly name: string;
  readonly default: boolean;
  readonly stage: FeatureStage;
  /** Locked to its default: setting the other value is an error. */
  readonly locked: boolean;
}

/** Every gate kube-proxy v1.34 knows, by name, in the order of the list. */
export const FEATURE_GATES: ReadonlyMap<string, FeatureGateSpec> = new Map(
  FEATURE_GATE_LINES.trim().split("\n").map((line) => {
    const [name, def, stage, locked] = line.trim().split(/\s+/);
    const spec: FeatureGateSpec = {
      name: name!,
      default: def === "true",
      stage: stage as FeatureStage,
      locked: locked === "locked",
    };
    return [spec.name, spec];
  }),
);

/**
 * Gates whose non-default value this program cannot honour, with the reason: the value that
 * would be refused and what upstream would do with it.
 */
const CANNOT_HONOUR: Readonly<Record<string, { value: boolean; reason: string }>> = {
  ComponentFlagz: {
    value: true,
    reason: "upstream then serves /flagz on the metrics server, which deno-kube-proxy does not",
  },
  ComponentStatusz: {
    value: true,
    reason: "upstream then serves /statusz on the metrics server, which deno-kube-proxy does not",
  },
  WatchListClient: {
    value: true,
    reason:
      "upstream's informers then stream their initial lists (watch-list); deno-kube-proxy's always list, then watch",
  },
};

/** What is wrong with one entry of a feature gate map. */
export interface FeatureGateProblem {
  /** The entry as `Name=value`. */
  readonly entry: string;
  readonly message: string;
}

/**
 * Whether `name` is on under `gates` (the `featureGates` map): its own entry, else
 * AllAlpha/AllBeta for an unlocked alpha/beta gate, else its default. Unknown gates are off.
 */
export function featureEnabled(gates: Readonly<Record<string, boolean>>, name: string): boolean {
  const spec = FEATURE_GATES.get(name);
  if (spec === undefined) return false;
  const own = gates[name];
  if (own !== undefined) return own;
  if (!spec.locked && name !== "AllAlpha" && name !== "AllBeta") {
    const all = spec.stage === "Alpha"
      ? gates.AllAlpha
      : spec.stage === "Beta"
      ? gates.AllBeta
      : undefined;
    if (all !== undefined) return all;
  }
  return spec.default;
}

/** Upstream's checks (unknown gate, locked gate) and ours (a value we cannot honour). */
export function checkFeatureGates(gates: Readonly<Record<string, boolean>>): FeatureGateProblem[] {
  const problems: FeatureGateProblem[] = [];
  for (const [name, value] of Object.entries(gates)) {
    const entry = `${name}=${value}`;
    const spec = FEATURE_GATES.get(name);
    if (spec === undefined) {
      problems.push({ entry, message: `unrecognized feature gate "${name}"` });
    } else if (spec.locked && value !== spec.default) {
      problems.push({
        entry,
        message:
          `cannot set feature gate "${name}" to ${value}: it is ${spec.stage} and locked to ${spec.default}`,
      });
    }
  }
  if (problems.length > 0) return problems;
  for (const [name, refused] of Object.entries(CANNOT_HONOUR)) {
    if (featureEnabled(gates, name) !== refused.value) continue;
    const all = FEATURE_GATES.get(name)!.stage === "Alpha" ? "AllAlpha" : "AllBeta";
    const setBy = gates[name] !== undefined ? name : all;
    const via = setBy === name ? "" : ` (set by ${all})`;
    problems.push({
      entry: `${setBy}=${gates[setBy]}`,
      message: `feature gate "${name}"${via} cannot be ${refused.value}: ${refused.reason}; ` +
        `expected ${name}=${!refused.value}`,
    });
  }
  return problems;
}

/** The `--help` lines listing every gate, as upstream's help for --feature-gates does. */
export function featureGateHelpLines(): string[] {
  return [...FEATURE_GATES.values()]
    .sort((a, b) => a.name.localeCompare(b.name))
    .map((g) =>
      `${g.name}=true|false (${g.stage.toUpperCase()}${
        g.locked ? ", LOCKED" : ""
      } - default=${g.default})`
    );
}
