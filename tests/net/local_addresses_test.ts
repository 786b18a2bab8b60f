import assert from "node:assert/strict";
import type { CommandRunner } from "../../lib/exec/mod.ts";
import { ipCommandAddressLister, parseIpAddrJson } from "../../lib/net/mod.ts";

import { IP_ADDR_JSON } from "./fixtures.ts";

Deno.test("parseIpAddrJson() returns the family's addresses, canonical and once each", () => {
  assert.deepEqual(parseIpAddrJson(IP_ADDR_JSON, "IPv4"), [
    "127.0.0.1",
    "192.168.0.2",
    "198.51.100.2",
  ]);
  assert.deepEqual(parseIpAddrJson(IP_ADDR_JSON, "IPv6"), ["fd00:192::2"]);
  assert.throws(() => parseIpAddrJson("{}", "IPv4"), /expected a JSON array/);
});

Deno.test("ipCommandAddressLister() runs ip -json addr show and fails on a non-zero exit", async () => {
  const ok: CommandRunner = ({ cmd, args }) =>
    Promise.resolve(
      cmd === "ip" && args.join(" ") === "-json -4 addr show"
        ? { code: 0, stdout: IP_ADDR_JSON, stderr: "" }
        : { code: 1, stdout: "", stderr: "unexpected" },
    );
  assert.deepEqual(await ipCommandAddressLister(ok)("IPv4"), [
    "127.0.0.1",
    "192.168.0.2",
    "198.51.100.2",
  ]);
  await assert.rejects(() => ipCommandAddressLister(ok)("IPv6"), /exited 1: unexpected/);
});
