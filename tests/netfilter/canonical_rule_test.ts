import assert from "node:assert/strict";
import { canonicalRule } from "../../lib/netfilter/mod.ts";
import { PRINTED, PRINTED6 } from "../backends/iptables/printed_rules.ts";

Deno.test("canonicalRule() prints rendered rules as iptables prints them back", () => {
  for (const [rendered, printed] of PRINTED) assert.equal(canonicalRule(rendered, "IPv4"), printed);
});

Deno.test("canonicalRule() gives IPv6 addresses /128 and the recent match an IPv6 mask", () => {
  for (const [rendered, printed] of PRINTED6) {
    assert.equal(canonicalRule(rendered, "IPv6"), printed);
  }
});

Deno.test("canonicalRule() quotes a comment unless it is only letters, digits, - and _", () => {
  const rule = (c: string) => canonicalRule(`-A C -m comment --comment ${c} -j RETURN`, "IPv4");
  assert.equal(rule("plain_text-1"), "-A C -m comment --comment plain_text-1 -j RETURN");
  assert.equal(rule('"a b"'), '-A C -m comment --comment "a b" -j RETURN');
  assert.equal(rule('"say \\"hi\\""'), '-A C -m comment --comment "say \\"hi\\"" -j RETURN');
});

Deno.test("canonicalRule() gives undefined for what it cannot print, never a guess", () => {
  for (
    const rule of [
      "-A C -m multiport --dports 80,443 -j RETURN", // a match it does not know
      "-A C -m tcp -p tcp --sport 80 -j RETURN", // an option its match does not take here
      "-A C -j DNAT --to-destination 10.0.0.1:80 --persistent", // a target option
      "-A C -j REJECT --reject-with icmp-port-unreachable",
      "-A C -m comment --comment -j RETURN", // a value missing
      "-A C ! -j RETURN",
      "-A C -s 10.0.0.1 -s 10.0.0.2 -j RETURN",
      '-A C -m comment --comment "unterminated -j RETURN',
      "-I C -j RETURN",
      "-A C -j MARK --or-mark 0x4000 --xor-mark 0x1",
      "-A C -m statistic --mode nth --every 2 -j RETURN",
    ]
  ) assert.equal(canonicalRule(rule, "IPv4"), undefined, rule);
});

Deno.test("canonicalRule() reads a quoted word whole, with its escapes undone", () => {
  assert.equal(
    canonicalRule('-A C -m comment --comment "a \\"b\\" c" -j X', "IPv4"),
    '-A C -m comment --comment "a \\"b\\" c" -j X',
  );
  assert.equal(canonicalRule('-A C -m comment --comment "open -j X', "IPv4"), undefined);
});

Deno.test("canonicalRule() prints the nfacct match as iptables-save does (two spaces)", () => {
  // As iptables 1.8.9 (legacy and nft) printed these back on this kernel.
  assert.equal(
    canonicalRule(
      "-A KUBE-FORWARD -m conntrack --ctstate INVALID -m nfacct --nfacct-name ct_state_invalid_dropped_pkts -j DROP",
      "IPv4",
    ),
    "-A KUBE-FORWARD -m conntrack --ctstate INVALID -m nfacct --nfacct-name  ct_state_invalid_dropped_pkts -j DROP",
  );
  assert.equal(
    canonicalRule(
      "-A KUBE-NODEPORTS -m comment --comment ns1/svc1:p80 -m tcp -p tcp -d 127.0.0.0/8 --dport 30080 -m nfacct --nfacct-name localhost_nps_accepted_pkts -j KUBE-EXT-X",
      "IPv4",
    ),
    '-A KUBE-NODEPORTS -d 127.0.0.0/8 -p tcp -m comment --comment "ns1/svc1:p80" -m tcp --dport 30080 -m nfacct --nfacct-name  localhost_nps_accepted_pkts -j KUBE-EXT-X',
  );
});
