import assert from "node:assert/strict";
import { canonicalIP, cidrContains, ipFamily, joinHostPort, parseCIDR } from "../../lib/net/mod.ts";

Deno.test("ipFamily() accepts valid addresses and rejects malformed ones", () => {
  assert.equal(ipFamily("10.0.0.1"), "IPv4");
  assert.equal(ipFamily("fd00::1"), "IPv6");
  assert.equal(ipFamily("::ffff:10.0.0.1"), "IPv6");
  for (
    const bad of ["10.0.0", "10.0.0.256", "010.0.0.1", "1.2.3.4 ", "fd00:::1", "x", "", "1::2::3"]
  ) {
    assert.equal(ipFamily(bad), null, bad);
  }
});

Deno.test("canonicalIP() compresses IPv6 the way Go prints it", () => {
  assert.equal(canonicalIP("FD00:0:0:0:0:0:0:1"), "fd00::1");
  assert.equal(canonicalIP("2001:db8:0:1:0:0:0:1"), "2001:db8:0:1::1");
  assert.equal(canonicalIP("1:0:2:0:3:0:4:0"), "1:0:2:0:3:0:4:0");
});

Deno.test("parseCIDR() clears host bits and cidrContains() matches by prefix", () => {
  const c = parseCIDR("10.1.2.3/8")!;
  assert.equal(`${c.ip}/${c.prefix}`, "10.0.0.0/8");
  assert.ok(cidrContains(c, "10.200.0.1"));
  assert.ok(!cidrContains(c, "11.0.0.1"));
  assert.ok(!cidrContains(c, "fd00::1"));
  assert.equal(parseCIDR("10.0.0.0/33"), null);
  assert.equal(parseCIDR("10.0.0.0"), null);
  const v6 = parseCIDR("fd00:10::5/64")!;
  assert.equal(v6.ip, "fd00:10::");
  assert.ok(cidrContains(v6, "fd00:10::abcd"));
});

Deno.test("joinHostPort() brackets IPv6", () => {
  assert.equal(joinHostPort("10.0.0.1", 80), "10.0.0.1:80");
  assert.equal(joinHostPort("fd00::1", 80), "[fd00::1]:80");
});
