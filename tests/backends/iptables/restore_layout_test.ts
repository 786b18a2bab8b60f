import assert from "node:assert/strict";
import { natLayout, type NatLayoutKind } from "../../../lib/backends/iptables/restore_layout.ts";
import type { RestoreBody } from "../../../lib/backends/iptables/restore_payload.ts";
import type { OwnedLine } from "../../../lib/backends/iptables/rule_buffer.ts";

const owned = (owner: string | null, ...texts: string[]): OwnedLine[] =>
  texts.map((text) => ({ owner, text }));

/** Two slices as a render yields them: each declares its chains, then writes their rules. */
const SLICES: OwnedLine[][] = [
  [
    ...owned(null, ":KUBE-SERVICES - [0:0]", ":KUBE-MARK-MASQ - [0:0]"),
    ...owned("ns1/b:p80/TCP", ":KUBE-SVC-ZZZ - [0:0]", ":KUBE-SEP-MMM - [0:0]"),
    ...owned(null, "-A KUBE-MARK-MASQ -j MARK --or-mark 0x4000"),
    ...owned(
      "ns1/b:p80/TCP",
      "-A KUBE-SERVICES -j KUBE-SVC-ZZZ",
      "-A KUBE-SVC-ZZZ -j KUBE-SEP-MMM",
    ),
  ],
  [
    ...owned("ns1/a:p80/TCP", ":KUBE-SVC-AAA - [0:0]", ":KUBE-SEP-QQQ - [0:0]"),
    ...owned("ns1/c:p80/TCP", ":KUBE-SVC-CCC - [0:0]"),
    ...owned(
      "ns1/a:p80/TCP",
      "-A KUBE-SERVICES -j KUBE-SVC-AAA",
      "-A KUBE-SVC-AAA -j KUBE-SEP-QQQ",
    ),
    ...owned("ns1/c:p80/TCP", "-A KUBE-SVC-CCC -j RETURN"),
  ],
];

/** A partial sync's body: top-level chains and ns1/c are left out. */
const PARTIAL: RestoreBody = {
  includeService: (key) => key !== "ns1/c:p80/TCP",
  canary: false,
  writeTopLevel: false,
};
const FULL: RestoreBody = { includeService: () => true, canary: true, writeTopLevel: true };

/** Runs a layout over SLICES: what is written before the render ends, and in all. */
function lay(kind: NatLayoutKind, body: RestoreBody): { early: string; all: string } {
  const nat = natLayout(kind, body);
  let early = nat.head() ?? "";
  for (const slice of SLICES) early += nat.slice(slice) ?? "";
  return { early, all: early + [...nat.held()].join("") };
}

const linesOf = (text: string) => text.split("\n").filter((l) => l !== "");

Deno.test('natLayout() "declarations first" writes every kept chain declaration, sorted by name, before any rule', () => {
  const { early, all } = lay("declarations first", PARTIAL);
  assert.equal(early, "*nat\n", "only the header before the render ends");
  assert.deepEqual(linesOf(all), [
    "*nat",
    ":KUBE-SEP-MMM - [0:0]",
    ":KUBE-SEP-QQQ - [0:0]",
    ":KUBE-SVC-AAA - [0:0]",
    ":KUBE-SVC-ZZZ - [0:0]",
    "-A KUBE-SERVICES -j KUBE-SVC-ZZZ",
    "-A KUBE-SVC-ZZZ -j KUBE-SEP-MMM",
    "-A KUBE-SERVICES -j KUBE-SVC-AAA",
    "-A KUBE-SVC-AAA -j KUBE-SEP-QQQ",
  ]);
});

Deno.test("natLayout() writes the same lines in every layout, each chain's rules in render order", () => {
  for (const body of [PARTIAL, FULL]) {
    const streamed = linesOf(lay("streamed", body).all);
    for (const kind of ["held", "declarations first"] as const) {
      const other = linesOf(lay(kind, body).all);
      assert.deepEqual([...other].sort(), [...streamed].sort(), kind);
      assert.deepEqual(
        other.filter((l) => l.startsWith("-A")),
        streamed.filter((l) => l.startsWith("-A")),
        `${kind}: rules in render order`,
      );
    }
  }
});

Deno.test("natLayout() streamed writes each slice as it renders; held writes nothing until the render ends", () => {
  const streamed = lay("streamed", FULL);
  assert.equal(streamed.early, streamed.all);
  assert.match(streamed.early, /^\*nat\n:KUBE-PROXY-CANARY - \[0:0\]\n:KUBE-SERVICES/);
  const held = lay("held", FULL);
  assert.equal(held.early, "");
  assert.equal(held.all, streamed.all);
});
