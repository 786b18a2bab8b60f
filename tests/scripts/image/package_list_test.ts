import assert from "node:assert/strict";
import { parsePackageList, readPackageList } from "../../../scripts/image/mod.ts";

Deno.test("parsePackageList() keeps names in order and drops comments and blank lines", () => {
  const text = "# tools\niptables\n\n  ipset  # sets\n#procps\nlibc6\n";
  assert.deepEqual(parsePackageList(text), ["iptables", "ipset", "libc6"]);
});

Deno.test("parsePackageList() rejects two names on a line, a repeat and an empty list", () => {
  assert.throws(
    () => parsePackageList("iptables ipset\n", "x"),
    /Invalid package "iptables ipset" on line 1 of x/,
  );
  assert.throws(
    () => parsePackageList("kmod\nkmod\n", "x"),
    /Package "kmod" is listed twice in x \(again on line 2\)/,
  );
  assert.throws(() => parsePackageList("# nothing\n", "x"), /No packages in x/);
});

Deno.test("deploy/image/packages.txt has every tool the permission set runs", async () => {
  const packages = await readPackageList();
  // The binaries of deno.json's `run` permission come from these (choom: util-linux, essential).
  for (const p of ["iptables", "ipset", "ipvsadm", "nftables", "conntrack", "iproute2", "procps"]) {
    assert.ok(packages.includes(p), `${p} missing from packages.txt`);
  }
  // modprobe for the IPVS DaemonSet's init container.
  assert.ok(packages.includes("kmod"));
});
