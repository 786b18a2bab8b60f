import assert from "node:assert/strict";
import { afterBuiltinRules, parseIptablesSave, scanSavedTable } from "../../lib/netfilter/mod.ts";

Deno.test("parseIptablesSave() reads tables, chains and rules", () => {
  const tables = parseIptablesSave(
    "# Generated\n*nat\n:PREROUTING ACCEPT [1:2]\n:KUBE-SERVICES - [0:0]\n-A PREROUTING -j KUBE-SERVICES\nCOMMIT\n",
  );
  const nat = tables.get("nat")!;
  assert.deepEqual([...nat.chains.values()].map((c) => [c.name, c.builtin]), [
    ["PREROUTING", true],
    [
      "KUBE-SERVICES",
      false,
    ],
  ]);
  assert.deepEqual(nat.rules, [{ chain: "PREROUTING", spec: "-j KUBE-SERVICES" }]);
});

Deno.test("parseIptablesSave() with prefixes leaves those chains out, and reads the rest as without", () => {
  const text = [
    "*nat",
    ":PREROUTING ACCEPT [0:0]",
    ":KUBE-SERVICES - [0:0]",
    ":KUBE-SVC-AAAA - [0:0]",
    ":KUBE-SEP-BBBB - [0:0]",
    "  :KUBE-SEP-CCCC - [0:0]  ",
    "-A PREROUTING -j KUBE-SERVICES",
    "-A KUBE-SERVICES -d 172.30.0.1/32 -j KUBE-SVC-AAAA",
    "-A KUBE-SVC-AAAA -j KUBE-SEP-BBBB",
    "-A KUBE-SEP-BBBB -j DNAT --to-destination 10.0.0.2:80",
    "--append KUBE-SEP-BBBB -j RETURN",
    "# -A KUBE-SERVICES -j DROP",
    "COMMIT",
    "*filter",
    ":KUBE-SVC-DDDD - [0:0]",
    "-A KUBE-SVC-DDDD -j ACCEPT",
    "COMMIT",
  ].join("\n");
  const skipped = parseIptablesSave(text, ["KUBE-SVC-", "KUBE-SEP-"]);
  const nat = skipped.get("nat")!;
  // Lines printed as iptables-save prints them are passed over; other forms are read as ever.
  assert.deepEqual([...nat.chains.keys()], ["PREROUTING", "KUBE-SERVICES", "KUBE-SEP-CCCC"]);
  assert.deepEqual(nat.rules, [
    { chain: "PREROUTING", spec: "-j KUBE-SERVICES" },
    { chain: "KUBE-SERVICES", spec: "-d 172.30.0.1/32 -j KUBE-SVC-AAAA" },
    { chain: "KUBE-SEP-BBBB", spec: "-j RETURN" },
  ]);
  assert.deepEqual([...skipped.get("filter")!.chains.keys()], []);
  // Without prefixes, the same text as ever.
  const whole = parseIptablesSave(text);
  assert.equal(whole.get("nat")!.rules.length, 5);
  assert.deepEqual([...whole.get("filter")!.chains.keys()], ["KUBE-SVC-DDDD"]);
});

/** The lines `afterBuiltinRules()` lets through before it stops (all of them if it never does). */
function readUntilStop(text: string): string[] {
  const stop = afterBuiltinRules();
  const out: string[] = [];
  for (const line of text.split("\n")) {
    out.push(line);
    if (stop(line)) break;
  }
  return out;
}

const SAVED_NAT = [
  "*nat",
  ":PREROUTING ACCEPT [0:0]",
  ":INPUT ACCEPT [0:0]",
  ":OUTPUT ACCEPT [0:0]",
  ":POSTROUTING ACCEPT [0:0]",
  ":KUBE-SERVICES - [0:0]",
  ":KUBE-SVC-AAAA - [0:0]",
  '-A PREROUTING -m comment --comment "kubernetes service portals" -j KUBE-SERVICES',
  '-A OUTPUT -m comment --comment "kubernetes service portals" -j KUBE-SERVICES',
  "-A POSTROUTING -j MASQUERADE",
  "-A KUBE-SERVICES -d 172.30.0.1/32 -j KUBE-SVC-AAAA",
  "-A KUBE-SVC-AAAA -j RETURN",
  "COMMIT",
].join("\n");

Deno.test("afterBuiltinRules() stops at the first rule after the built-in chains' rules, all headers read", () => {
  const read = readUntilStop(SAVED_NAT);
  assert.equal(read.at(-1), "-A KUBE-SERVICES -d 172.30.0.1/32 -j KUBE-SVC-AAAA");
  const nat = parseIptablesSave(read.join("\n")).get("nat")!;
  assert.deepEqual([...nat.chains.keys()], [
    "PREROUTING",
    "INPUT",
    "OUTPUT",
    "POSTROUTING",
    "KUBE-SERVICES",
    "KUBE-SVC-AAAA",
  ]);
  assert.deepEqual(nat.rules.map((r) => r.chain), [
    "PREROUTING",
    "OUTPUT",
    "POSTROUTING",
    "KUBE-SERVICES",
  ]);
});

Deno.test("afterBuiltinRules() reads on while a built-in chain's rules may still come (header order)", () => {
  // A user chain printed before a built-in one: its rules come first and must not stop it.
  const text = [
    "*filter",
    ":OTHER - [0:0]",
    ":INPUT ACCEPT [0:0]",
    ":KUBE-X - [0:0]",
    "-A OTHER -j RETURN",
    "-A INPUT -j KUBE-X",
    "-A KUBE-X -j RETURN",
    "COMMIT",
  ].join("\n");
  assert.equal(readUntilStop(text).at(-1), "-A KUBE-X -j RETURN");
  // No rules beyond the built-in chains: everything is read.
  const builtinOnly = "*filter\n:INPUT ACCEPT [0:0]\n:KUBE-X - [0:0]\n-A INPUT -j KUBE-X\nCOMMIT";
  assert.deepEqual(readUntilStop(builtinOnly), builtinOnly.split("\n"));
});

Deno.test("scanSavedTable() keeps the built-in chains, their rules and the user chains asked for", () => {
  const asked: string[] = [];
  const nat = scanSavedTable(
    `# Generated\n${SAVED_NAT}\n*filter\n:INPUT DROP [0:0]\nCOMMIT\n`,
    (c) => {
      asked.push(c);
      return c.startsWith("KUBE-SVC-");
    },
  )!;
  assert.equal(nat.name, "nat");
  assert.deepEqual(asked, ["KUBE-SERVICES", "KUBE-SVC-AAAA"], "asked once per user chain");
  assert.deepEqual([...nat.chains.values()], [
    { name: "PREROUTING", policy: "ACCEPT", builtin: true },
    { name: "INPUT", policy: "ACCEPT", builtin: true },
    { name: "OUTPUT", policy: "ACCEPT", builtin: true },
    { name: "POSTROUTING", policy: "ACCEPT", builtin: true },
    { name: "KUBE-SVC-AAAA", policy: "-", builtin: false },
  ]);
  // The built-in chains' rules, as parseIptablesSave() reads them; the other table is not read.
  const parsed = parseIptablesSave(SAVED_NAT).get("nat")!;
  const builtin = new Set(["PREROUTING", "INPUT", "OUTPUT", "POSTROUTING"]);
  assert.deepEqual(nat.rules, parsed.rules.filter((r) => builtin.has(r.chain)));
  assert.equal(nat.rules.length, 3);
});

Deno.test("scanSavedTable() reads output cut short, headers without counters and no table", () => {
  const cut = readUntilStop(SAVED_NAT).join("\n");
  const nat = scanSavedTable(cut, () => false)!;
  assert.deepEqual([...nat.chains.keys()], ["PREROUTING", "INPUT", "OUTPUT", "POSTROUTING"]);
  assert.deepEqual(nat.rules.map((r) => r.spec), [
    '-m comment --comment "kubernetes service portals" -j KUBE-SERVICES',
    '-m comment --comment "kubernetes service portals" -j KUBE-SERVICES',
    "-j MASQUERADE",
  ]);
  const bare = scanSavedTable(
    "*filter\n:FORWARD DROP\n:KUBE-FIREWALL -\n-A FORWARD -j X",
    () => true,
  )!;
  assert.deepEqual([...bare.chains.values()], [
    { name: "FORWARD", policy: "DROP", builtin: true },
    { name: "KUBE-FIREWALL", policy: "-", builtin: false },
  ]);
  assert.deepEqual(bare.rules, [{ chain: "FORWARD", spec: "-j X" }]);
  assert.equal(scanSavedTable("", () => true), undefined);
  assert.equal(scanSavedTable("# only a comment\n", () => true), undefined);
});

/** SAVED_NAT as `iptables -t nat -S` lists it: `-P`/`-N` headers, no `*nat`, no COMMIT. */
const LISTED_NAT = SAVED_NAT.split("\n").filter((l) => l !== "*nat" && l !== "COMMIT").map((l) =>
  l.startsWith(":")
    ? (l.includes(" - [") ? `-N ${l.slice(1, l.indexOf(" "))}` : `-P ${l.slice(1, -6)}`)
    : l
).join("\n");

Deno.test("afterBuiltinRules() and scanSavedTable() read an `iptables -S` listing as its save", () => {
  assert.match(LISTED_NAT, /^-P PREROUTING ACCEPT\n/);
  assert.match(LISTED_NAT, /\n-N KUBE-SVC-AAAA\n/);
  const read = readUntilStop(LISTED_NAT);
  assert.equal(read.at(-1), "-A KUBE-SERVICES -d 172.30.0.1/32 -j KUBE-SVC-AAAA");
  const keep = (c: string) => c.startsWith("KUBE-SVC-");
  const saved = scanSavedTable(readUntilStop(SAVED_NAT).join("\n"), keep)!;
  const listed = scanSavedTable(read.join("\n"), keep, "nat")!;
  assert.deepEqual(listed, saved);
  assert.equal(listed.rules.length, 3);
  // A listing of built-in chains only, as of a table nothing was added to.
  const empty = scanSavedTable("-P INPUT ACCEPT\n-P FORWARD DROP\n", () => true, "filter")!;
  assert.deepEqual([...empty.chains.values()], [
    { name: "INPUT", policy: "ACCEPT", builtin: true },
    { name: "FORWARD", policy: "DROP", builtin: true },
  ]);
  assert.deepEqual(empty.rules, []);
});
