/**
 * The SYN-retransmission count the mode-switch tests assert on (scripts/netns/netstat.ts), read
 * from a real namespace: a connection whose first SYN the server pod drops is still answered,
 * after the client's kernel sent the SYN again, and the client namespace's count says so.
 * Namespaces `synrt-*`.
 */
import assert from "node:assert/strict";
import { netstatCounter, synRetransmits } from "../../scripts/netns/mod.ts";
import { withTopology } from "./support/with_topology.ts";

Deno.test("netstatCounter() reads a named counter of a /proc/net/netstat group", () => {
  const text = [
    "TcpExt: SyncookiesSent TCPSynRetrans TWKilled",
    "TcpExt: 3 17 0",
    "IpExt: InNoRoutes TCPSynRetrans",
    "IpExt: 5 99",
    "",
  ].join("\n");
  assert.equal(netstatCounter(text, "TcpExt", "TCPSynRetrans"), 17);
  assert.equal(netstatCounter(text, "IpExt", "TCPSynRetrans"), 99);
  assert.equal(netstatCounter(text, "TcpExt", "NoSuchCounter"), null);
  assert.equal(netstatCounter(text, "MPTcpExt", "TCPSynRetrans"), null);
});

Deno.test("e2e: a lost SYN is answered after its retransmission, and the client's namespace counts it", async () => {
  await withTopology({
    prefix: "synrt",
    ipv6: false,
    pods: [{ name: "server", ip: "10.0.1.2" }, { name: "client", ip: "10.0.2.2" }],
  }, async ({ topo }) => {
    await topo.startEchoServer("server");
    const probe = () =>
      topo.probe({ from: "client", proto: "tcp", to: "10.0.1.2:8080", timeoutMs: 5000 });
    const before = await synRetransmits(topo, "client");
    assert.equal((await probe())[0]?.ok, true, "the first connection is answered");
    assert.equal(await synRetransmits(topo, "client"), before, "no SYN was sent again");

    // The server pod drops the next SYN it receives, once.
    const drop = await topo.exec("server", "iptables", [
      "-A",
      "INPUT",
      "-p",
      "tcp",
      "--syn",
      "--dport",
      "8080",
      "-m",
      "statistic",
      "--mode",
      "nth",
      "--every",
      "1000",
      "--packet",
      "0",
      "-j",
      "DROP",
    ]);
    assert.equal(drop.code, 0, `iptables failed: ${drop.stderr}`);
    const answers = await probe();
    assert.equal(
      answers[0]?.ok,
      true,
      `the second connection is answered: ${JSON.stringify(answers)}`,
    );
    assert.equal(await synRetransmits(topo, "client"), before + 1, "one SYN was sent again");
  });
});
