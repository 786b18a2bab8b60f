/**
 * Full syncs against the real iptables-restore and iptables-save of both flavours, in a bare
 * network namespace: the streamed restore input (nat first, slices, tail after the reads) and
 * the reads that stop after the built-in chains must still delete stale chains, insert each
 * missing jump exactly once and never duplicate one; a forced full sync reads nothing, and the
 * canary check after it finds what only a read shows.
 */
import assert from "node:assert/strict";
import { createIptablesProxier } from "../../lib/backends/iptables/proxier.ts";
import { type IptablesFlavour } from "../../lib/netfilter/mod.ts";
import type { CommandRunner } from "../../lib/exec/mod.ts";
import type { ProxyState } from "../../lib/proxy/mod.ts";
import { ep, sps, state, svc } from "../backends/iptables/state_fixtures.ts";
import { netnsExecRunner } from "../support/netns_runner.ts";

const STALE = "KUBE-SVC-STALE0123456789AB";

function services(n: number): ProxyState {
  const ports = [];
  for (let i = 0; i < n; i++) {
    ports.push(
      sps(svc({ name: `s${i}`, clusterIP: `172.30.${Math.floor(i / 250)}.${(i % 250) + 1}` }), [
        ep(`10.1.${i >> 8}.${i & 255}`, 8080),
        ep(`10.2.${i >> 8}.${i & 255}`, 8080),
      ]),
    );
  }
  return state(ports);
}

async function run(runner: CommandRunner, cmd: string, ...args: string[]): Promise<string> {
  const out = await runner({ cmd, args });
  assert.equal(out.code, 0, `${cmd} ${args.join(" ")}: ${out.stderr}`);
  return out.stdout;
}

for (const flavour of ["legacy", "nft"] as const satisfies readonly IptablesFlavour[]) {
  Deno.test(`e2e [iptables-${flavour}]: full syncs delete stale chains and keep each jump exactly once`, async () => {
    const ns = `kfs-${flavour}`;
    await new Deno.Command("ip", { args: ["netns", "del", ns], stderr: "null" }).output();
    const added = await new Deno.Command("ip", { args: ["netns", "add", ns] }).output();
    assert.equal(added.code, 0);
    const runner = netnsExecRunner(ns);
    const iptables = `iptables-${flavour}`;
    const save = (table: string) => run(runner, `${iptables}-save`, "-t", table);
    const count = (text: string, line: string) => text.split("\n").filter((l) => l === line).length;
    const jump = '-A PREROUTING -m comment --comment "kubernetes service portals" -j KUBE-SERVICES';
    const filterJump =
      '-A INPUT -m comment --comment "kubernetes health check service ports" -j KUBE-NODEPORTS';
    try {
      // A leftover of an earlier run: a service chain nothing renders any more.
      await run(runner, iptables, "-t", "nat", "-N", STALE);
      await run(runner, iptables, "-t", "nat", "-A", STALE, "-j", "RETURN");
      // 600 services: iptables-save prints far more than the reads take in.
      const proxier = createIptablesProxier({ family: "IPv4", flavour, runner });
      const first = await proxier.sync(services(600));
      assert.equal(first.full, true);
      let nat = await save("nat");
      assert.equal(nat.includes(STALE), false, "the stale chain is gone");
      assert.equal(count(nat, jump), 1);
      assert.equal(nat.split("\n").filter((l) => l.startsWith("-A KUBE-SERVICES ")).length, 601);
      assert.equal(count(await save("filter"), filterJump), 1);

      // Forced full syncs write every chain from what the last restore left; the canary check
      // after one reads the tables. Jumps present are never inserted twice.
      const builtinRules = async () => {
        const text = (await save("nat")) + (await save("filter"));
        return text.split("\n").filter((l) =>
          /^-A (PREROUTING|INPUT|FORWARD|OUTPUT|POSTROUTING) /.test(l)
        );
      };
      const jumps = await builtinRules();
      assert.equal(jumps.length, 14, jumps.join("\n"));
      await proxier.sync({ ...services(600), forceFullSync: true });
      assert.equal(await proxier.rulesFlushed(), false, "nothing changed behind our back");
      await proxier.sync({ ...services(600), forceFullSync: true });
      assert.deepEqual(await builtinRules(), jumps);

      // A jump someone deleted: the canary check after the next forced full sync finds it, and
      // the full sync it asks for brings it back, once.
      await run(
        runner,
        iptables,
        "-t",
        "nat",
        "-D",
        "PREROUTING",
        "-m",
        "comment",
        "--comment",
        "kubernetes service portals",
        "-j",
        "KUBE-SERVICES",
      );
      assert.equal(count(await save("nat"), jump), 0);
      await proxier.sync({ ...services(600), forceFullSync: true });
      assert.equal(count(await save("nat"), jump), 0, "a forced full sync writes no jump blind");
      assert.equal(await proxier.rulesFlushed(), true);
      assert.equal((await proxier.sync(services(600))).full, true);
      nat = await save("nat");
      assert.equal(count(nat, jump), 1);
      assert.deepEqual(await builtinRules(), jumps);

      // Fewer services: the chains of the removed ones are deleted.
      await proxier.sync({ ...services(500), forceFullSync: true });
      nat = await save("nat");
      assert.equal(nat.split("\n").filter((l) => l.startsWith("-A KUBE-SERVICES ")).length, 501);
      const svcChains = nat.split("\n").filter((l) => /^:KUBE-SVC-/.test(l)).length;
      assert.equal(svcChains, 500);

      // A service chain another program added after our last read goes after the check.
      await run(runner, iptables, "-t", "nat", "-N", STALE);
      await proxier.sync({ ...services(500), forceFullSync: true });
      assert.equal(await proxier.rulesFlushed(), true);
      await proxier.sync(services(500));
      assert.equal((await save("nat")).includes(STALE), false);
      assert.equal(await proxier.rulesFlushed(), false);
    } finally {
      await new Deno.Command("ip", { args: ["netns", "del", ns] }).output();
    }
  });
}
