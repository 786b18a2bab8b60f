/**
 * canonicalRule against the real iptables: every rendered rule of printed_rules.ts, restored
 * into a namespace of its own (`kcr-<flavour>`), is listed back exactly as canonicalRule prints
 * it, with iptables-legacy and iptables-nft, IPv4 and IPv6. Needs root, iproute2 and both
 * iptables flavours; fails loudly without them.
 */
import assert from "node:assert/strict";
import { canonicalRule } from "../../lib/netfilter/mod.ts";
import { denoCommandRunner } from "../../lib/exec/mod.ts";
import type { IPFamily } from "../../lib/proxy/mod.ts";
import { addNamespaces, deleteNamespaces, requireCommands } from "../../scripts/netns/mod.ts";
import { PRINTED, PRINTED6 } from "../backends/iptables/printed_rules.ts";

async function inNamespace(ns: string, cmd: string, args: string[], stdin?: string) {
  const input = { cmd: "ip", args: ["netns", "exec", ns, cmd, ...args] };
  const out = await denoCommandRunner(stdin === undefined ? input : { ...input, stdin });
  assert.equal(out.code, 0, `${cmd} ${args.join(" ")}: ${out.stderr}`);
  return out.stdout;
}

/** Every chain a rule is in or jumps to, declared so the restore accepts the rules. */
function declarations(rules: readonly string[]): string[] {
  const chains = new Set<string>();
  for (const rule of rules) {
    chains.add(rule.split(" ")[1]!);
    const target = / -j (KUBE-\S+)/.exec(rule)?.[1];
    if (target !== undefined) chains.add(target);
  }
  return [...chains].map((c) => `:${c} - [0:0]`);
}

for (const flavour of ["legacy", "nft"] as const) {
  Deno.test(`e2e [iptables-${flavour}]: canonicalRule prints what iptables lists back`, async () => {
    requireCommands([`iptables-${flavour}`, `ip6tables-${flavour}-restore`]);
    const ns = `kcr-${flavour}`;
    await deleteNamespaces([ns]);
    await addNamespaces([ns]);
    try {
      const cases: [IPFamily, readonly (readonly [string, string])[]][] = [
        ["IPv4", PRINTED],
        ["IPv6", PRINTED6],
      ];
      for (const [family, pairs] of cases) {
        const bin = `${family === "IPv6" ? "ip6tables" : "iptables"}-${flavour}`;
        const rendered = pairs.map(([r]) => r);
        const input = ["*nat", ...declarations(rendered), ...rendered, "COMMIT", ""].join("\n");
        await inNamespace(ns, `${bin}-restore`, ["--noflush"], input);
        const listed = new Set((await inNamespace(ns, bin, ["-t", "nat", "-S"])).split("\n"));
        for (const [r, printed] of pairs) {
          assert.ok(listed.has(printed), `${bin} did not list:\n${printed}`);
          assert.equal(canonicalRule(r, family), printed);
        }
      }
    } finally {
      await deleteNamespaces([ns]);
    }
  });
}
