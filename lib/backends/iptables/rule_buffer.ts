/**
 * Line buffers for iptables-restore input. Each nat line carries its owner (a service port
 * key, or null for top-level chains) so a partial sync can leave out unchanged services.
 */
import { chainLine, joinRule, type RulePart } from "../../netfilter/mod.ts";

/** One line of restore input and the service port that owns it (null: top-level). */
export interface OwnedLine {
  readonly owner: string | null;
  readonly text: string;
  /**
   * The chain the line declares or appends to, as the render named it: the very string of its
   * declaration wherever the render reuses one, so a layout grouping lines by chain looks each
   * name up without reading it out of the text.
   */
  readonly chain: string;
}

/** Collects the lines of one render: filter (all top-level) and nat (owned). */
export class RuleBuffers {
  /** filter chain declarations. */
  readonly filterChains: string[] = [];
  /** filter rules. */
  readonly filterRules: string[] = [];
  /** nat chain declarations, owned. */
  readonly natChains: OwnedLine[] = [];
  /** nat rules, owned. */
  readonly natRules: OwnedLine[] = [];

  /** Declares a filter chain. */
  filterChain(chain: string): void {
    this.filterChains.push(chainLine(chain));
  }

  /** Writes a filter rule. */
  filter(...parts: RulePart[]): void {
    this.filterRules.push(joinRule(parts));
  }

  /** Declares a nat chain owned by `owner`. */
  natChain(owner: string | null, chain: string): void {
    this.natChains.push({ owner, text: chainLine(chain), chain });
  }

  /** Writes a nat rule owned by `owner`; `parts` start with `-A` and its chain. */
  nat(owner: string | null, ...parts: RulePart[]): void {
    const text = joinRule(parts);
    this.natRules.push({ owner, text, chain: ruleChain(parts, text) });
  }

  /** Writes a nat rule of `chain` owned by `owner`, already joined into one `-A chain` line. */
  natLine(owner: string | null, chain: string, text: string): void {
    this.natRules.push({ owner, text, chain });
  }

  /** The nat chain declarations then nat rules written so far, removed from the buffers. */
  takeNat(): OwnedLine[] {
    const lines = this.natChains.concat(this.natRules);
    this.natChains.length = 0;
    this.natRules.length = 0;
    return lines;
  }
}

/** The chain of an `-A CHAIN ...` rule: its second part, else read out of its text. */
function ruleChain(parts: readonly RulePart[], text: string): string {
  const chain = parts[1];
  if (parts[0] === "-A" && typeof chain === "string") return chain;
  return text.slice(3, text.indexOf(" ", 3));
}
