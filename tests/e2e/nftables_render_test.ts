/**
 * The nftables renderer's scripts on a real kernel: the full transaction of a varied state
 * (NodePorts, external IPs, LBs with source ranges, ETP/ITP Local, affinity, no endpoints,
 * SCTP; IPv4 and IPv6) is accepted by `nft -f` in a network namespace, partial transactions
 * (model diff and table store) apply on top of it and leave what a fresh render wants, and a
 * second full transaction recreates the table in place.
 * Needs root and nft; fails loudly without them. IP plan: tests/backends/iptables/state_fixtures.ts.
 */
import assert from "node:assert/strict";
import { fullTransaction, partialTransaction } from "../../lib/backends/nftables/transaction.ts";
import {
  newNftTableStore,
  renderNftables,
  updateNftTableStore,
} from "../../lib/backends/nftables/render.ts";
import { resolveNftRenderConfig } from "../../lib/backends/nftables/render_options.ts";
import { requireCommands } from "../../scripts/netns/mod.ts";
import { servicePortKey } from "../../lib/proxy/mod.ts";
import { ep, sps, state, svc, variedServicePorts } from "../backends/iptables/state_fixtures.ts";

const OPTS = { clusterCIDRs: ["10.0.0.0/8", "fd00:10::/64"] };

async function run(
  args: string[],
  stdin?: string,
): Promise<{ code: number; out: string; err: string }> {
  const child = new Deno.Command(args[0]!, {
    args: args.slice(1),
    stdin: stdin === undefined ? "null" : "piped",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  if (stdin !== undefined) {
    const w = child.stdin.getWriter();
    await w.write(new TextEncoder().encode(stdin));
    await w.close();
  }
  const o = await child.output();
  const dec = new TextDecoder();
  return { code: o.code, out: dec.decode(o.stdout), err: dec.decode(o.stderr) };
}

/** Runs `nft -f -` in `ns`; fails the test with nft's message when it is refused. */
async function nftApply(ns: string, script: string): Promise<void> {
  const r = await run(["ip", "netns", "exec", ns, "nft", "-f", "-"], script);
  assert.equal(r.code, 0, r.err.slice(0, 3000));
}

/** How many elements the kernel holds in one set or map. */
async function elementCount(
  ns: string,
  family: string,
  kind: string,
  name: string,
): Promise<number> {
  const r = await run([
    "ip",
    "netns",
    "exec",
    ns,
    "nft",
    "-j",
    "list",
    kind,
    family,
    "kube-proxy",
    name,
  ]);
  assert.equal(r.code, 0, r.err);
  const json = JSON.parse(r.out) as { nftables: Record<string, { elem?: unknown[] }>[] };
  const obj = json.nftables.find((o) => o[kind] !== undefined)!;
  return obj[kind]!.elem?.length ?? 0;
}

async function withNamespace(body: (ns: string) => Promise<void>): Promise<void> {
  requireCommands(["ip", "nft"]);
  const ns = `knl-render-${Deno.pid}`;
  const add = await run(["ip", "netns", "add", ns]);
  assert.equal(add.code, 0, add.err);
  try {
    await body(ns);
  } finally {
    await run(["ip", "netns", "del", ns]);
  }
}

Deno.test("nftables scripts: full, partial and recreate are accepted by the kernel", async () => {
  await withNamespace(async (ns) => {
    for (const family of ["IPv4", "IPv6"] as const) {
      const first = renderNftables(state(variedServicePorts(60, family), { family }), OPTS);
      await nftApply(ns, fullTransaction(first.model).script);
      const fam = first.model.family;
      const svcIPs = first.model.sets.get("service-ips")!.elements.size;
      assert.ok(svcIPs > 30);
      assert.equal(await elementCount(ns, fam, "map", "service-ips"), svcIPs);

      // Partial by model diff: endpoints moved, services removed and added.
      const second = renderNftables(state(variedServicePorts(45, family, 1), { family }), OPTS);
      const tx = partialTransaction(first.model, second.model);
      assert.ok(tx !== null);
      await nftApply(ns, tx.script);
      for (
        const set of [
          "service-ips",
          "service-endpoints-tcp",
          "service-endpoints-udp",
          "nodeport-endpoints-sctp",
          "no-endpoint-services",
          "firewall-allow",
        ]
      ) {
        const kind = second.model.sets.get(set)!.kind;
        assert.equal(
          await elementCount(ns, fam, kind, set),
          second.model.sets.get(set)!.elements.size,
          `${fam} ${set}`,
        );
      }

      // Partial from the table store, then a full transaction recreates the table in place.
      const s3 = state(variedServicePorts(50, family, 2), { family });
      const config = resolveNftRenderConfig(s3, OPTS);
      const store = newNftTableStore(config);
      updateNftTableStore(
        store,
        state(variedServicePorts(45, family, 1), { family }),
        config,
        true,
      );
      store.markWritten();
      updateNftTableStore(store, s3, config, false);
      const tx3 = store.takeTransaction();
      assert.ok(tx3 !== null);
      await nftApply(ns, tx3.script);
      assert.equal(
        await elementCount(ns, fam, "map", "service-endpoints-udp"),
        renderNftables(s3, OPTS).model.sets.get("service-endpoints-udp")!.elements.size,
      );
      // New endpoint counts need new shared chains whose rules use the existing endpoint maps.
      const v6 = family === "IPv6";
      const extra = (["TCP", "UDP", "SCTP"] as const).map((protocol, i) =>
        sps(
          svc({
            name: `seven-${i}`,
            protocol,
            clusterIP: v6 ? `fd00:30::7:${i}` : `172.30.77.${i + 1}`,
            nodePort: 31700 + i,
            externalPolicyLocal: i === 0,
          }),
          Array.from({ length: 7 }, (_, k) =>
            ep(v6 ? `fd00:10::77:${k}` : `10.77.${i}.${k + 1}`, 9000, { isLocal: k < 2 })),
        )
      );
      const services4 = new Map(s3.services);
      for (const e of extra) services4.set(servicePortKey(e.info.name), e);
      const s4 = {
        ...s3,
        services: services4,
        changed: new Set(extra.map((e) => servicePortKey(e.info.name))),
      };
      updateNftTableStore(store, s4, config, false);
      const tx4 = store.takeTransaction();
      assert.ok(tx4 !== null && tx4.chainsWritten >= 3, tx4?.script ?? "needs a full sync");
      await nftApply(ns, tx4.script);
      await nftApply(ns, fullTransaction(renderNftables(s4, OPTS).model).script);
      const listed = await run([
        "ip",
        "netns",
        "exec",
        ns,
        "nft",
        "list",
        "table",
        fam,
        "kube-proxy",
      ]);
      assert.equal(listed.code, 0);
      assert.match(
        listed.out,
        /chain nat-prerouting \{\n\s+type nat hook prerouting priority dstnat; policy accept;/,
      );
    }
  });
});
