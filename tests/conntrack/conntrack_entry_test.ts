import assert from "node:assert/strict";
import { parseConntrackList } from "../../lib/conntrack/mod.ts";
import { parseConntrackLine } from "../../lib/conntrack/conntrack_entry.ts";

// Lines as conntrack v1.4.7 prints them on this kernel (`conntrack -L -p udp` / `-o extended`).
const REPLIED =
  "udp      17 59 src=10.0.0.3 dst=172.30.0.1 sport=5000 dport=53 src=10.1.0.1 dst=10.0.0.3 sport=5353 dport=5000 mark=0 use=1";
const UNREPLIED =
  "udp      17 59 src=10.0.0.9 dst=172.30.0.2 sport=5000 dport=53 [UNREPLIED] src=172.30.0.2 dst=10.0.0.9 sport=53 dport=5000 mark=0 use=1";
const EXTENDED =
  "ipv4     2 udp      17 29 src=10.0.3.2 dst=172.30.0.53 sport=40053 dport=53 src=10.0.1.2 dst=10.0.3.2 sport=8080 dport=40053 [ASSURED] mark=0 use=1";
const SCTP =
  "sctp     132 59 ESTABLISHED src=10.0.0.9 dst=172.30.0.2 sport=5000 dport=9 [UNREPLIED] src=10.1.0.3 dst=10.0.0.9 sport=9 dport=5000 mark=0 use=1";
const IPV6 =
  "udp      17 28 src=fd00:10::3 dst=fd00:30::53 sport=40053 dport=53 src=fd00:10::1 dst=fd00:10::3 sport=8080 dport=40053 mark=0 use=1";

Deno.test("parseConntrackLine() reads both tuples of a replied flow", () => {
  assert.deepEqual(parseConntrackLine(REPLIED), {
    protocol: "UDP",
    origSrc: "10.0.0.3",
    origDst: "172.30.0.1",
    origSport: 5000,
    origDport: 53,
    replySrc: "10.1.0.1",
    replySport: 5353,
    unreplied: false,
  });
});

Deno.test("parseConntrackLine() marks [UNREPLIED] flows and keeps a flow that was never DNATed", () => {
  const e = parseConntrackLine(UNREPLIED);
  assert.equal(e?.unreplied, true);
  assert.equal(e?.replySrc, "172.30.0.2", "reply source = original destination: no DNAT");
});

Deno.test("parseConntrackLine() reads -o extended, SCTP with a state word, and IPv6", () => {
  assert.equal(parseConntrackLine(EXTENDED)?.replySport, 8080);
  assert.equal(parseConntrackLine(SCTP)?.protocol, "SCTP");
  assert.equal(parseConntrackLine(SCTP)?.replySrc, "10.1.0.3");
  assert.equal(parseConntrackLine(IPV6)?.origDst, "fd00:30::53");
});

Deno.test("parseConntrackList() keeps unreadable lines aside instead of guessing", () => {
  const { entries, unparsed } = parseConntrackList(
    [
      REPLIED,
      "",
      "conntrack v1.4.7 (conntrack-tools): 2 flow entries have been shown.",
      "udp 17 59 src=10.0.0.3 dst=172.30.0.1 sport=5000 dport=53", // reply tuple missing
      "udp 17 59 src=10.0.0.3 dst=172.30.0.1 sport=5000 dport=99999 src=1.1.1.1 dst=10.0.0.3 sport=1 dport=5000",
      "udp 17 59 src=x;rm dst=172.30.0.1 sport=5000 dport=53 src=1.1.1.1 dst=10.0.0.3 sport=1 dport=5000",
      UNREPLIED,
    ].join("\n"),
  );
  assert.equal(entries.length, 2);
  assert.equal(unparsed.length, 4);
});
