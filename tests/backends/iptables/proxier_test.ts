import assert from "node:assert/strict";
import { CommandError } from "../../../lib/exec/mod.ts";
import { createFakeIptables, type FakeIptables } from "../../support/fake_iptables.ts";
import { fakeWithStaleChains, SEP1, setup, SVC1, twoEndpoints } from "./proxier_fixtures.ts";
import { ep, key, sps, state, svc } from "./state_fixtures.ts";

Deno.test("IptablesProxier.sync() does a full sync first and programs the rules", async () => {
  const { proxier, chains, rulesOf } = setup();
  const report = await proxier.sync(twoEndpoints());
  assert.equal(report.full, true);
  assert.ok(report.counts.nat! > 0);
  assert.ok(chains().includes(SVC1));
  assert.ok(chains().includes(SEP1));
  assert.deepEqual(rulesOf("PREROUTING"), [
    '-m comment --comment "kubernetes service portals" -j KUBE-SERVICES',
  ]);
  for (const table of ["mangle", "nat", "filter"]) {
    assert.ok(chains(table).includes("KUBE-PROXY-CANARY"));
  }
});

Deno.test("IptablesProxier.sync() does not duplicate jump rules on a second full sync", async () => {
  const { proxier, rulesOf } = setup();
  await proxier.sync(twoEndpoints());
  await proxier.sync({ ...twoEndpoints(), forceFullSync: true });
  assert.equal(rulesOf("PREROUTING")!.length, 1);
  assert.equal(rulesOf("INPUT", "filter")!.length, 4);
});

Deno.test("IptablesProxier.sync() follows an endpoint change with a partial sync", async () => {
  const { proxier, chains, rulesOf } = setup();
  await proxier.sync(twoEndpoints());
  const oneEndpoint = state([sps(svc(), [ep("10.180.0.1")])], { changed: [key()] });
  const report = await proxier.sync(oneEndpoint);
  assert.equal(report.full, false);
  assert.equal(chains().filter((c) => c.startsWith("KUBE-SEP-")).length, 1);
  assert.deepEqual(
    rulesOf(SVC1)!.at(-1),
    `-m comment --comment "ns1/svc1:p80 -> 10.180.0.1:80" -j ${SEP1}`,
  );
});

Deno.test("IptablesProxier.sync() deletes the chains of a deleted service", async () => {
  const { proxier, chains } = setup();
  const both = state([
    sps(svc(), [ep("10.180.0.1")]),
    sps(svc({ name: "svc2", clusterIP: "172.30.0.42" }), [ep("10.180.0.2")]),
  ]);
  await proxier.sync(both);
  const before = chains().filter((c) => c.startsWith("KUBE-SVC-")).length;
  await proxier.sync(state([sps(svc(), [ep("10.180.0.1")])], { changed: [key("ns1", "svc2")] }));
  assert.equal(before, 2);
  assert.deepEqual(chains().filter((c) => /^KUBE-(SVC|SEP)-/.test(c)), [SVC1, SEP1]);
});

Deno.test("IptablesProxier.sync() removes stale chains left by an earlier process on a full sync", async () => {
  const fake = fakeWithStaleChains();
  const { proxier, chains } = setup(fake);
  await proxier.sync(twoEndpoints());
  assert.ok(!chains().some((c) => c.includes("OLD")));
});

Deno.test("IptablesProxier.sync() with iptables-nft lists only nat and filter, and still removes stale chains and restores jumps", async () => {
  const fake = createFakeIptables();
  const stale = (name: string) =>
    fake.restore(
      "nft",
      "IPv4",
      `*nat\n:KUBE-SEP-${name} - [0:0]\n-A KUBE-SEP-${name} -j RETURN\nCOMMIT\n`,
    );
  stale("OLDOLDOLDOLDOLDO");
  const { proxier, chains, rulesOf } = setup(fake, "IPv4", "nft");
  await proxier.sync(twoEndpoints());
  assert.ok(!chains().some((c) => c.includes("OLD")));
  const jump = rulesOf("PREROUTING")![0]!;
  assert.equal(
    (await fake.run({
      cmd: "iptables-nft",
      args: ["-t", "nat", "-D", "PREROUTING", ...jump.split(" ")],
    })).code,
    0,
  );
  assert.deepEqual(rulesOf("PREROUTING"), []);
  stale("NEWNEWNEWNEWNEWN");
  let before = fake.calls.length;
  const calls = () => fake.calls.slice(before).map((c) => `${c.cmd} ${c.args.join(" ")}`);
  // The hourly full sync rewrites our chains from what the last restore left, reading nothing.
  await proxier.sync({ ...twoEndpoints(), forceFullSync: true });
  assert.deepEqual(calls(), ["iptables-nft-restore -w 5 -W 100000 --noflush --counters"]);
  assert.deepEqual(rulesOf("PREROUTING"), [], "a forced full sync writes no jump blind");
  // The next canary check reads nat and filter once; `-t T -S` fetches only T (iptables-nft-save
  // would fetch every table whatever -t says).
  before = fake.calls.length;
  assert.equal(await proxier.rulesFlushed(), true, "the missing jump and the new chain are found");
  assert.deepEqual(calls(), [
    "iptables-nft -w 5 -t mangle -S KUBE-PROXY-CANARY",
    "iptables-nft -w 5 -t nat -S",
    "iptables-nft -w 5 -t filter -S",
  ]);
  before = fake.calls.length;
  const report = await proxier.sync(twoEndpoints());
  assert.equal(report.full, true);
  assert.ok(!chains().some((c) => c.includes("NEW")), "a chain added since is found and removed");
  assert.deepEqual(rulesOf("PREROUTING"), [jump], "the missing jump is back, once");
  assert.deepEqual(calls().filter((c) => !c.includes("restore")), [
    "iptables-nft -w 5 -t nat -S",
    "iptables-nft -w 5 -t filter -S",
  ]);
  before = fake.calls.length;
  assert.equal(await proxier.rulesFlushed(), false);
  assert.deepEqual(calls(), ["iptables-nft -w 5 -t mangle -S KUBE-PROXY-CANARY"]);
});

Deno.test("IptablesProxier.rulesFlushed() after a forced full sync reads the tables once, and finds nothing on an intact node", async () => {
  const { fake, proxier, rulesOf } = setup();
  await proxier.sync(twoEndpoints());
  const kinds = (from: number) =>
    fake.calls.slice(from).map((c) => c.cmd.replace(/^iptables-legacy-?/, "") || "iptables");
  let before = fake.calls.length;
  assert.equal(await proxier.rulesFlushed(), false);
  assert.deepEqual(kinds(before), ["iptables"], "a full sync that read the tables needs no audit");
  before = fake.calls.length;
  await proxier.sync({ ...twoEndpoints(), forceFullSync: true });
  assert.equal(await proxier.rulesFlushed(), false);
  assert.deepEqual(kinds(before), ["restore", "iptables", "save", "save"]);
  before = fake.calls.length;
  assert.equal(await proxier.rulesFlushed(), false);
  assert.deepEqual(kinds(before), ["iptables"], "once only");
  assert.equal(rulesOf("PREROUTING")!.length, 1);
  const report = await proxier.sync(
    state([sps(svc(), [ep("10.180.0.1"), ep("10.180.0.2")])], { changed: [] }),
  );
  assert.equal(report.full, false, "nothing found: the next sync is partial");
});

Deno.test("IptablesProxier.rulesFlushed() drops an audit that a sync overlapped, and audits again next time", async () => {
  const fake = createFakeIptables();
  let hold: Promise<void> | undefined;
  const { proxier, chains } = setup({
    ...fake,
    run: async (input) => {
      if (hold !== undefined && input.cmd.endsWith("-save")) await hold;
      return fake.run(input);
    },
  });
  await proxier.sync(twoEndpoints());
  await proxier.sync({ ...twoEndpoints(), forceFullSync: true });
  let release = () => {};
  hold = new Promise((r) => release = r);
  const audit = proxier.rulesFlushed();
  await new Promise((r) => setTimeout(r, 0));
  // A service removed while the read is held: the read sees its chain, our set no longer does.
  const gone = proxier.sync(state([], { changed: [key("ns1", "svc1")] }));
  release();
  await gone;
  hold = undefined;
  assert.ok(!chains().includes(SVC1));
  assert.equal(await audit, false, "a read that overlapped a sync proves nothing");
  const before = fake.calls.length;
  assert.equal(await proxier.rulesFlushed(), false);
  assert.equal(fake.calls.slice(before).filter((c) => c.cmd.endsWith("-save")).length, 2);
});

Deno.test("IptablesProxier.sync() keeps the old rules, counts and throws when restore fails", async () => {
  const { fake, proxier, c, logger, rulesOf } = setup();
  await proxier.sync(twoEndpoints());
  const before = fake.save("legacy", "IPv4");
  fake.failNextRestore("iptables-restore: line 7 failed\n");
  await assert.rejects(
    proxier.sync(state([sps(svc(), [ep("10.180.0.9")])], { changed: [key()] })),
    (err: unknown) => err instanceof CommandError && err.code === 1,
  );
  assert.deepEqual(c, { failures: 1, partial: 1 });
  assert.equal(fake.save("legacy", "IPv4"), before);
  assert.ok(logger.lines.some((l) => l.startsWith("E") && l.includes("line 7 failed")));
  const next = await proxier.sync(state([sps(svc(), [ep("10.180.0.9")])], { changed: [] }));
  assert.equal(next.full, true);
  assert.match(rulesOf(SVC1)!.at(-1)!, /10\.180\.0\.9:80/);
});

Deno.test("IptablesProxier.rulesFlushed() notices a firewall reload and the next sync is full", async () => {
  const { fake, proxier, chains } = setup();
  assert.equal(await proxier.rulesFlushed(), false);
  await proxier.sync(twoEndpoints());
  assert.equal(await proxier.rulesFlushed(), false);
  const before = fake.calls.length;
  assert.equal(await proxier.rulesFlushed(), false);
  assert.deepEqual(
    fake.calls.slice(before).map((c) => c.args.join(" ")),
    ["-w 5 -t mangle -S KUBE-PROXY-CANARY"],
    "an intact node costs one read of the small mangle table, never nat or filter",
  );
  for (const table of ["mangle", "nat", "filter"]) {
    for (const op of ["-F", "-X"]) {
      assert.equal((await fake.run({ cmd: "iptables-legacy", args: ["-t", table, op] })).code, 0);
    }
  }
  assert.equal(await proxier.rulesFlushed(), true);
  const report = await proxier.sync(
    state([sps(svc(), [ep("10.180.0.1"), ep("10.180.0.2")])], { changed: [] }),
  );
  assert.equal(report.full, true);
  assert.ok(chains().includes(SVC1));
  assert.equal(await proxier.rulesFlushed(), false);
});

Deno.test("IptablesProxier.sync() uses ip6tables binaries for IPv6", async () => {
  const fake = createFakeIptables();
  const { proxier } = setup(fake, "IPv6");
  await proxier.sync(
    state([sps(svc({ clusterIP: "fd00:30::41" }), [ep("fd00:10::1")])], { family: "IPv6" }),
  );
  assert.ok(fake.calls.every((c) => c.cmd.startsWith("ip6tables-legacy")));
  const restore = fake.calls.find((c) => c.cmd === "ip6tables-legacy-restore")!;
  assert.deepEqual(restore.args, ["-w", "5", "-W", "100000", "--noflush", "--counters"]);
  assert.ok(fake.table("legacy", "IPv6", "nat").has(SVC1));
});

Deno.test("IptablesProxier.sync() refuses a state of the other family", async () => {
  const { proxier } = setup();
  await assert.rejects(proxier.sync(state([], { family: "IPv6" })), /Invalid state family "IPv6"/);
});

Deno.test("IptablesProxier.sync() programs a NodePort service with both traffic policies Local", async () => {
  const { proxier, chains, rulesOf } = setup();
  const info = svc({ nodePort: 30080, internalPolicyLocal: true, externalPolicyLocal: true });
  const report = await proxier.sync(
    state([sps(info, [ep("10.180.0.1", 80, { isLocal: true }), ep("10.180.0.2")])]),
  );
  assert.equal(report.full, true);
  // KUBE-EXT short-circuits pod and node traffic to the cluster chain: it must exist.
  const ext = chains().find((c) => c.startsWith("KUBE-EXT-"))!;
  const targets = rulesOf(ext)!.map((r) => /-j (\S+)/.exec(r)?.[1]);
  assert.ok(targets.includes(SVC1), `KUBE-EXT jumps to ${targets.join(", ")}`);
  assert.ok(chains().includes(SVC1));
  assert.ok(chains().some((c) => c.startsWith("KUBE-SVL-")));
});

Deno.test("IptablesProxier.sync() with iptables-nft sorts each run of nat chain declarations by name, and leaves what legacy leaves", async () => {
  const many = state(
    Array.from(
      { length: 40 },
      (_, i) =>
        sps(svc({ name: `svc${i}`, clusterIP: `172.30.1.${i + 1}` }), [
          ep(`10.180.1.${i + 1}`),
          ep(`10.180.2.${i + 1}`),
        ]),
    ),
  );
  const nft = setup(createFakeIptables(), "IPv4", "nft");
  const legacy = setup(createFakeIptables(), "IPv4", "legacy");
  await nft.proxier.sync(many);
  await legacy.proxier.sync(many);
  /** The runs of declarations in one restore's nat table, each as written. */
  const runs = (fake: FakeIptables, cmd: string) => {
    const stdin = fake.calls.find((c) => c.cmd === cmd)!.stdin!;
    const found: string[][] = [];
    let previous = "";
    for (const line of stdin.split("COMMIT")[0]!.split("\n").slice(2)) { // after *nat, canary
      if (!line.startsWith(":")) {
        previous = line;
        continue;
      }
      if (!previous.startsWith(":")) found.push([]);
      found.at(-1)!.push(line);
      previous = line;
    }
    return found;
  };
  const nftRuns = runs(nft.fake, "iptables-nft-restore");
  assert.ok(nftRuns.length > 1 && nftRuns.flat().length > 120, `${nftRuns.length} runs`);
  for (const run of nftRuns) assert.deepEqual(run, [...run].sort());
  assert.deepEqual(
    nftRuns.flat().sort(),
    runs(legacy.fake, "iptables-legacy-restore").flat().sort(),
  );
  assert.ok(
    runs(legacy.fake, "iptables-legacy-restore").some((r) => r.join() !== [...r].sort().join()),
    "legacy keeps the render's order",
  );
  for (const table of ["nat", "filter", "mangle"]) {
    assert.deepEqual(
      nft.fake.table("nft", "IPv4", table),
      legacy.fake.table("legacy", "IPv4", table),
      table,
    );
  }
});
