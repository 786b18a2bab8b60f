import assert from "node:assert/strict";
import {
  createNfacctClient,
  CT_STATE_INVALID_DROPPED_COUNTER,
  LOCALHOST_NODEPORTS_ACCEPTED_COUNTER,
  NFACCT_COUNTERS,
  parseNfacctList,
  probeNfacct,
} from "../../../lib/backends/iptables/nfacct.ts";
import { renderFullRestore } from "../../../lib/backends/iptables/restore_payload.ts";
import type { CommandInput, CommandOutput } from "../../../lib/exec/mod.ts";
import { createMemoryLogger } from "../../../lib/log/mod.ts";
import { ep, sps, state, svc } from "./state_fixtures.ts";

/**
 * A fake `nfacct` binary over a kernel's accounting objects: `add` makes one (and fails, as
 * the kernel does, when it exists), `list` prints them as nfacct 1.0.2 does.
 */
function fakeNfacct(opts: { available?: boolean } = {}) {
  const objects = new Map<string, number>();
  const run = (input: CommandInput): Promise<CommandOutput> => {
    const result = (code: number, stdout = "", stderr = "") =>
      Promise.resolve({ code, stdout, stderr });
    if (input.cmd !== "nfacct") return result(127, "", `${input.cmd}: command not found`);
    if (opts.available === false) {
      return result(1, "", "nfacct v1.0.2: error: Protocol not supported");
    }
    const [op, name] = input.args ?? [];
    if (op === "list") {
      const pad = (n: number) => String(n).padStart(20, "0");
      return result(
        0,
        [...objects].map(([n, p]) => `{ pkts = ${pad(p)}, bytes = ${pad(p * 60)} } = ${n};\n`)
          .join(""),
      );
    }
    if (op === "add" && name !== undefined) {
      if (objects.has(name)) return result(1, "", "nfacct v1.0.2: error: Device or resource busy");
      objects.set(name, 0);
      return result(0);
    }
    return result(1, "", "nfacct v1.0.2: error: unknown command");
  };
  return { run, objects };
}

Deno.test("parseNfacctList() reads packets and bytes per object", () => {
  const text = "{ pkts = 00000000000000000012, bytes = 00000000000000000720 } = " +
    "ct_state_invalid_dropped_pkts;\n" +
    "{ pkts = 00000000000000000000, bytes = 00000000000000000000 } = localhost_nps_accepted_pkts;\n";
  assert.deepEqual(
    parseNfacctList(text),
    new Map([
      ["ct_state_invalid_dropped_pkts", { packets: 12, bytes: 720 }],
      ["localhost_nps_accepted_pkts", { packets: 0, bytes: 0 }],
    ]),
  );
  assert.equal(parseNfacctList("").size, 0);
});

Deno.test("NfacctClient.ensure() makes the missing objects and keeps the existing ones", async () => {
  const nfacct = fakeNfacct();
  nfacct.objects.set(CT_STATE_INVALID_DROPPED_COUNTER, 5);
  const client = createNfacctClient(nfacct.run, createMemoryLogger());
  assert.deepEqual(await client.ensure(NFACCT_COUNTERS), new Set(NFACCT_COUNTERS));
  assert.equal(nfacct.objects.get(CT_STATE_INVALID_DROPPED_COUNTER), 5, "not reset");
  assert.equal(nfacct.objects.get(LOCALHOST_NODEPORTS_ACCEPTED_COUNTER), 0);
  // Again: nothing to make, nothing fails.
  assert.deepEqual(await client.ensure(NFACCT_COUNTERS), new Set(NFACCT_COUNTERS));
});

Deno.test("probeNfacct() says once that nfacct is missing", async () => {
  const logger = createMemoryLogger();
  const client = createNfacctClient(fakeNfacct({ available: false }).run, logger);
  assert.equal(await probeNfacct(client, logger), false);
  assert.equal(logger.lines.length, 1);
  assert.match(logger.lines[0]!, /nfacct is not available/);
  assert.equal(await probeNfacct(createNfacctClient(fakeNfacct().run, logger), logger), true);
});

Deno.test("renderIptables() adds the nfacct matches only for the objects the node has", () => {
  const s = state([sps(svc({ nodePort: 30080 }), [ep("10.180.0.1")])]);
  const plain = renderFullRestore(s, {});
  assert.doesNotMatch(plain, /nfacct/, "render output without nfacct is unchanged");
  const counted = renderFullRestore(s, { nfacctCounters: new Set(NFACCT_COUNTERS) });
  const lines = counted.split("\n");
  assert.ok(lines.includes(
    "-A KUBE-FORWARD -m conntrack --ctstate INVALID -m nfacct --nfacct-name " +
      "ct_state_invalid_dropped_pkts -j DROP",
  ));
  const nodePorts = lines.filter((l) => l.startsWith("-A KUBE-NODEPORTS "));
  assert.equal(nodePorts.length, 2);
  assert.match(
    nodePorts[0]!,
    /^-A KUBE-NODEPORTS -m comment --comment ns1\/svc1:p80 -m tcp -p tcp -d 127\.0\.0\.0\/8 --dport 30080 -m nfacct --nfacct-name localhost_nps_accepted_pkts -j KUBE-EXT-/,
  );
  assert.doesNotMatch(nodePorts[1]!, /nfacct|127\.0\.0\.0/);
  // Every other line is as without nfacct.
  const without = (text: string) => text.split("\n").filter((l) => !l.includes("nfacct"));
  assert.deepEqual(
    without(counted),
    plain.split("\n").filter((l) => !l.includes("--ctstate INVALID")),
  );
  // No localhost NodePorts (IPv6, or turned off): no localhost rule, the INVALID one stays.
  const off = renderFullRestore(s, {
    nfacctCounters: new Set(NFACCT_COUNTERS),
    localhostNodePorts: false,
  });
  assert.doesNotMatch(off, /localhost_nps_accepted_pkts/);
  assert.match(off, /--nfacct-name ct_state_invalid_dropped_pkts/);
  // Only one object made: only its match.
  const one = renderFullRestore(s, {
    nfacctCounters: new Set([LOCALHOST_NODEPORTS_ACCEPTED_COUNTER]),
  });
  assert.doesNotMatch(one, /ct_state_invalid_dropped_pkts/);
  assert.match(one, /localhost_nps_accepted_pkts/);
});
