/**
 * Line buffers for iptables-restore input. Each nat line carries its owner (a service port
 * key, or null for top-level chains) so a partial sync can leave out unchanged services.
 */
import { chainLine, joinRule, type RulePart } from "../../netfilter/mod.ts";

/** One line of restore input and the service port that owns it (null: top-level). */
export interface OwnedLine {
  readonly owner: string | null;
  readonly text: string;
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
    this.natChains.push({ owner, text: chainLine(chain) });
  }

  /** Writes a nat rule owned by `owner`. */
  nat(owner: string | null, ...parts: RulePart[]): void {
    this.natRules.push({ owner, text: joinRule(parts) });
  }

  /** The nat chain declarations then nat rules written so far, removed from the buffers. */
  takeNat(): OwnedLine[] {
    const lines = this.natChains.concat(this.natRules);
    this.natChains.length = 0;
    this.natRules.length = 0;
    return lines;
  }
}
