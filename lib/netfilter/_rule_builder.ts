/**
 * Builds iptables-restore lines, and the rules of the chains iptables and IPVS mode share
 * (KUBE-POSTROUTING, KUBE-MARK-MASQ, KUBE-FORWARD's accept rules), which both modes write
 * alike so that a switch between them finds the same rules. Pure.
 */

/** One argument or a group of arguments; groups are flattened when the line is written. */
export type RulePart = string | readonly string[];

/** Joins arguments into one restore line, as upstream's LineBuffer.Write does. */
export function joinRule(parts: readonly RulePart[]): string {
  const words: string[] = [];
  for (const p of parts) {
    if (typeof p === "string") words.push(p);
    else words.push(...p);
  }
  return words.join(" ");
}

/** A `:CHAIN - [0:0]` declaration; in --noflush mode it also flushes an existing chain. */
export function chainLine(chain: string): string {
  return `:${chain} - [0:0]`;
}

/** Wraps a comment in double quotes the way upstream pre-quotes multi-word comments. */
export function quoted(text: string): string {
  return `"${text}"`;
}

/**
 * The nat KUBE-POSTROUTING rules: leave packets without the masquerade mark, clear the mark
 * (so a packet that re-traverses the stack is not masqueraded twice), masquerade the rest.
 */
export function kubePostroutingRules(mark: string, randomFully: boolean): RulePart[][] {
  const chain = "KUBE-POSTROUTING";
  return [
    ["-A", chain, "-m", "mark", "!", "--mark", `${mark}/${mark}`, "-j", "RETURN"],
    ["-A", chain, "-j", "MARK", "--xor-mark", mark],
    [
      "-A",
      chain,
      "-m",
      "comment",
      "--comment",
      quoted("kubernetes service traffic requiring SNAT"),
      "-j",
      "MASQUERADE",
      randomFully ? ["--random-fully"] : [],
    ],
  ];
}

/** The nat KUBE-MARK-MASQ rule: set the masquerade mark for KUBE-POSTROUTING. */
export function kubeMarkMasqRule(mark: string): RulePart[] {
  return ["-A", "KUBE-MARK-MASQ", "-j", "MARK", "--or-mark", mark];
}

/** The filter KUBE-FORWARD accept rules: marked (service) traffic and established flows. */
export function kubeForwardAcceptRules(mark: string): RulePart[][] {
  const comment = (text: string) => ["-m", "comment", "--comment", quoted(text)];
  return [
    [
      "-A",
      "KUBE-FORWARD",
      comment("kubernetes forwarding rules"),
      ["-m", "mark", "--mark", `${mark}/${mark}`],
      ["-j", "ACCEPT"],
    ],
    [
      "-A",
      "KUBE-FORWARD",
      comment("kubernetes forwarding conntrack rule"),
      ["-m", "conntrack", "--ctstate", "RELATED,ESTABLISHED"],
      ["-j", "ACCEPT"],
    ],
  ];
}
