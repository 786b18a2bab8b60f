import assert from "node:assert/strict";
import {
  nameTableBucket,
  natLayout,
  type NatLayoutKind,
} from "../../../lib/backends/iptables/restore_layout.ts";
import type { RestoreBody } from "../../../lib/backends/iptables/restore_payload.ts";
import type { OwnedLine } from "../../../lib/backends/iptables/rule_buffer.ts";

/** Lines of `owner`, each naming the chain it declares (`:NAME`) or appends to (`-A NAME`). */
const owned = (owner: string | null, ...texts: string[]): OwnedLine[] =>
  texts.map((text) => ({
    owner,
    text,
    chain: text.split(" ")[text.startsWith(":") ? 0 : 1]!.replace(/^:/, ""),
  }));

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
function lay(
  kind: NatLayoutKind,
  body: RestoreBody,
  sortDeclarations = false,
): { early: string; all: string } {
  const nat = natLayout(kind, body, { sortDeclarations });
  let early = nat.head() ?? "";
  for (const slice of SLICES) early += nat.slice(slice) ?? "";
  return { early, all: early + [...nat.held()].join("") };
}

const linesOf = (text: string) => text.split("\n").filter((l) => l !== "");

Deno.test("natLayout() with sortDeclarations sorts each slice's kept chain declarations by name, ahead of its rules", () => {
  assert.deepEqual(linesOf(lay("streamed", PARTIAL, true).all), [
    "*nat",
    ":KUBE-SEP-MMM - [0:0]",
    ":KUBE-SVC-ZZZ - [0:0]",
    "-A KUBE-SERVICES -j KUBE-SVC-ZZZ",
    "-A KUBE-SVC-ZZZ -j KUBE-SEP-MMM",
    ":KUBE-SEP-QQQ - [0:0]",
    ":KUBE-SVC-AAA - [0:0]",
    "-A KUBE-SERVICES -j KUBE-SVC-AAA",
    "-A KUBE-SVC-AAA -j KUBE-SEP-QQQ",
  ]);
  const full = linesOf(lay("streamed", FULL, true).all);
  assert.deepEqual(full.slice(0, 6), [
    "*nat",
    ":KUBE-PROXY-CANARY - [0:0]",
    ":KUBE-MARK-MASQ - [0:0]",
    ":KUBE-SEP-MMM - [0:0]",
    ":KUBE-SERVICES - [0:0]",
    ":KUBE-SVC-ZZZ - [0:0]",
  ]);
});

Deno.test("natLayout() writes the same lines, rules in render order, whichever layout and sorting", () => {
  for (const body of [PARTIAL, FULL]) {
    const plain = linesOf(lay("streamed", body).all);
    for (const [kind, sort] of [["held", false], ["streamed", true], ["held", true]] as const) {
      const other = linesOf(lay(kind, body, sort).all);
      assert.deepEqual([...other].sort(), [...plain].sort(), `${kind}, sorted ${sort}`);
      assert.deepEqual(
        other.filter((l) => l.startsWith("-A")),
        plain.filter((l) => l.startsWith("-A")),
        `${kind}, sorted ${sort}: rules in render order`,
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

Deno.test("natLayout() counts into `written` the rules of the lines it keeps, whichever layout and sorting", () => {
  for (const [body, rules] of [[PARTIAL, 4], [FULL, 6]] as const) {
    for (
      const [kind, sort] of [
        ["streamed", false],
        ["held", false],
        ["streamed", true],
        ["saved", false],
      ] as const
    ) {
      const written = { nat: 0, filter: 0 };
      const nat = natLayout(kind, body, { sortDeclarations: sort, written });
      let text = nat.head() ?? "";
      for (const slice of SLICES) text += nat.slice(slice) ?? "";
      text += [...nat.held()].join("");
      assert.equal(linesOf(text).filter((l) => l.startsWith("-A ")).length, rules);
      assert.deepEqual(written, { nat: rules, filter: 0 }, `${kind}, sorted ${sort}`);
    }
  }
});

Deno.test("natLayout() saved writes nothing until the render ends, then every chain declared in reverse name order (KUBE-MARK-MASQ last), then the rules chain by chain in name order", () => {
  const saved = lay("saved", FULL);
  assert.equal(saved.early, "");
  assert.deepEqual(linesOf(saved.all), [
    "*nat",
    // The head's canary, then the declarations.
    ":KUBE-PROXY-CANARY - [0:0]",
    ":KUBE-SVC-ZZZ - [0:0]",
    ":KUBE-SVC-CCC - [0:0]",
    ":KUBE-SVC-AAA - [0:0]",
    ":KUBE-SERVICES - [0:0]",
    ":KUBE-SEP-QQQ - [0:0]",
    ":KUBE-SEP-MMM - [0:0]",
    // Declared after the others (see DECLARED_LAST); its rules keep their place in name order.
    ":KUBE-MARK-MASQ - [0:0]",
    "-A KUBE-MARK-MASQ -j MARK --or-mark 0x4000",
    "-A KUBE-SERVICES -j KUBE-SVC-ZZZ",
    "-A KUBE-SERVICES -j KUBE-SVC-AAA",
    "-A KUBE-SVC-AAA -j KUBE-SEP-QQQ",
    "-A KUBE-SVC-CCC -j RETURN",
    "-A KUBE-SVC-ZZZ -j KUBE-SEP-MMM",
  ]);
  assert.deepEqual(linesOf(lay("saved", PARTIAL).all), [
    "*nat",
    ":KUBE-SVC-ZZZ - [0:0]",
    ":KUBE-SVC-AAA - [0:0]",
    ":KUBE-SEP-QQQ - [0:0]",
    ":KUBE-SEP-MMM - [0:0]",
    "-A KUBE-SVC-AAA -j KUBE-SEP-QQQ",
    "-A KUBE-SVC-ZZZ -j KUBE-SEP-MMM",
    // Chains the input does not declare come last.
    "-A KUBE-SERVICES -j KUBE-SVC-ZZZ",
    "-A KUBE-SERVICES -j KUBE-SVC-AAA",
  ]);
});

Deno.test("natLayout() saved writes the same lines as streamed, whatever it declares last", () => {
  for (const body of [PARTIAL, FULL]) {
    const saved = linesOf(lay("saved", body).all);
    assert.deepEqual([...saved].sort(), linesOf(lay("streamed", body).all).sort());
    const declared = saved.filter((l) => l.startsWith(":"));
    const firstRule = saved.findIndex((l) => l.startsWith("-A"));
    assert.ok(saved.slice(firstRule).every((l) => !l.startsWith(":")), "declarations first");
    assert.equal(declared.includes(":KUBE-MARK-MASQ - [0:0]"), body === FULL);
  }
});

Deno.test("nameTableBucket() is libxtables' bucket of a name (djb2 mod 512)", () => {
  // Values from an independent djb2 (Python, over the names' bytes).
  assert.equal(nameTableBucket("DNAT"), 460);
  assert.equal(nameTableBucket("KUBE-MARK-MASQ"), 227);
  assert.equal(nameTableBucket("KUBE-SEP-AAOAAAAAAAAAAAAA"), 460);
  assert.equal(nameTableBucket(""), 5381 % 512);
});

Deno.test("natLayout() saved declares the endpoint chains of DNAT's bucket after every other endpoint chain's rules, and writes the same lines", () => {
  // KUBE-SEP-AAOA... and KUBE-SEP-CMAA... share DNAT's bucket; KUBE-SEP-BBBB... does not.
  const inBucket = ["KUBE-SEP-AAOAAAAAAAAAAAAA", "KUBE-SEP-CMAAAAAAAAAAAAAA"];
  const other = "KUBE-SEP-BBBBBBBBBBBBBBBB";
  const sep = (name: string) => [
    `:${name} - [0:0]`,
    `-A ${name} -s 10.0.0.1/32 -j KUBE-MARK-MASQ`,
    `-A ${name} -p tcp -m tcp -j DNAT --to-destination 10.0.0.1:80`,
  ];
  const slice = [
    ...owned(null, ":KUBE-SERVICES - [0:0]", ":KUBE-MARK-MASQ - [0:0]"),
    ...owned("ns1/a:p80/TCP", ":KUBE-SVC-AAA - [0:0]"),
    ...owned("ns1/a:p80/TCP", ...[...inBucket, other].flatMap(sep).filter((l) => l[0] === ":")),
    ...owned("ns1/a:p80/TCP", "-A KUBE-SERVICES -j KUBE-SVC-AAA"),
    ...owned("ns1/a:p80/TCP", ...[...inBucket, other].flatMap(sep).filter((l) => l[0] === "-")),
    ...owned("ns1/a:p80/TCP", ...[...inBucket, other].map((n) => `-A KUBE-SVC-AAA -j ${n}`)),
  ];
  const nat = natLayout("saved", FULL);
  nat.slice(slice);
  const saved = linesOf([...nat.held()].join(""));
  const streamed = natLayout("streamed", FULL);
  const plain = linesOf((streamed.head() ?? "") + streamed.slice(slice));
  assert.deepEqual([...saved].sort(), [...plain].sort());
  const at = (line: string) => saved.indexOf(line);
  for (const name of inBucket) {
    // Declared after the last rule of the other endpoint chain, before the rules naming it.
    assert.ok(at(`:${name} - [0:0]`) > at(sep(other)[2]!), name);
    assert.ok(at(`:${name} - [0:0]`) < at(`-A ${name} -s 10.0.0.1/32 -j KUBE-MARK-MASQ`), name);
    assert.ok(at(sep(name)[2]!) < at("-A KUBE-SERVICES -j KUBE-SVC-AAA"), name);
  }
  assert.ok(at(`:${other} - [0:0]`) < saved.findIndex((l) => l.startsWith("-A")), other);
  // Rules stay chain by chain in name order, the deferred chains in name order among themselves.
  assert.ok(at(sep(inBucket[0]!)[2]!) < at(sep(inBucket[1]!)[1]!));
});
