import assert from "node:assert/strict";
import {
  GUEST_MODULES,
  moduleLoadOrder,
  moduleName,
  parseModulesBuiltin,
  parseModulesDep,
  stripModuleSignature,
} from "../../../scripts/ipvs_vm/mod.ts";

// The shape of a real 6.1 modules.dep: a module's own dependencies, nearest last.
const DEP =
  `kernel/net/netfilter/ipvs/ip_vs_rr.ko: kernel/net/netfilter/ipvs/ip_vs.ko kernel/net/netfilter/nf_conntrack.ko kernel/net/ipv6/netfilter/nf_defrag_ipv6.ko kernel/net/ipv4/netfilter/nf_defrag_ipv4.ko kernel/lib/libcrc32c.ko
kernel/net/netfilter/ipvs/ip_vs.ko: kernel/net/netfilter/nf_conntrack.ko kernel/net/ipv6/netfilter/nf_defrag_ipv6.ko kernel/net/ipv4/netfilter/nf_defrag_ipv4.ko kernel/lib/libcrc32c.ko
kernel/net/netfilter/nf_conntrack.ko: kernel/net/ipv6/netfilter/nf_defrag_ipv6.ko kernel/net/ipv4/netfilter/nf_defrag_ipv4.ko kernel/lib/libcrc32c.ko
kernel/net/ipv6/netfilter/nf_defrag_ipv6.ko:
kernel/net/ipv4/netfilter/nf_defrag_ipv4.ko:
kernel/lib/libcrc32c.ko:
kernel/crypto/crc32c_generic.ko:
kernel/drivers/net/dummy.ko:
`;

Deno.test("moduleName() strips folders and .ko suffixes and spells dashes as underscores", () => {
  assert.equal(moduleName("kernel/arch/x86/crypto/crc32c-intel.ko"), "crc32c_intel");
  assert.equal(moduleName("kernel/fs/9p/9p.ko.xz"), "9p");
  assert.equal(moduleName("ip_vs"), "ip_vs");
});

Deno.test("moduleLoadOrder() puts every dependency before its user, each module once", () => {
  const order = moduleLoadOrder(parseModulesDep(DEP), ["crc32c_generic", "ip_vs_rr", "ip_vs"]);
  const names = order.map(moduleName);
  assert.equal(new Set(names).size, names.length);
  assert.equal(names[0], "crc32c_generic");
  const before = (a: string, b: string) => names.indexOf(a) < names.indexOf(b);
  assert.ok(before("libcrc32c", "nf_conntrack"));
  assert.ok(before("nf_defrag_ipv4", "nf_conntrack"));
  assert.ok(before("nf_conntrack", "ip_vs"));
  assert.ok(before("ip_vs", "ip_vs_rr"));
  assert.ok(!names.includes("dummy"));
});

Deno.test("moduleLoadOrder() skips built-in modules and names an unknown one", () => {
  const deps = parseModulesDep(DEP);
  const builtin = parseModulesBuiltin("kernel/net/ipv6/ipv6.ko\n");
  assert.deepEqual(moduleLoadOrder(deps, ["ipv6", "dummy"], builtin), [
    "kernel/drivers/net/dummy.ko",
  ]);
  assert.throws(() => moduleLoadOrder(deps, ["ip_vs_mh"]), /Unknown kernel module "ip_vs_mh"/);
});

Deno.test("moduleLoadOrder() refuses a dependency cycle", () => {
  const deps = parseModulesDep("kernel/a.ko: kernel/b.ko\nkernel/b.ko: kernel/a.ko\n");
  assert.throws(() => moduleLoadOrder(deps, ["a"]), /cycle/);
});

Deno.test("GUEST_MODULES lists each module once and loads crc32c before anything needing it", () => {
  assert.equal(new Set(GUEST_MODULES).size, GUEST_MODULES.length);
  assert.equal(GUEST_MODULES[0], "crc32c_generic");
  for (const m of ["ip_vs", "ip_vs_rr", "ip_set", "xt_set", "dummy", "9p", "overlay"]) {
    assert.ok(GUEST_MODULES.includes(m), m);
  }
});

Deno.test("stripModuleSignature() cuts the appended signature and leaves unsigned modules alone", () => {
  const body = new TextEncoder().encode("\x7fELF module body");
  const sig = new Uint8Array(37).fill(0xab);
  const info = new Uint8Array(12);
  new DataView(info.buffer).setUint32(8, sig.length, false);
  const magic = new TextEncoder().encode("~Module signature appended~\n");
  const signed = new Uint8Array([...body, ...sig, ...info, ...magic]);
  assert.deepEqual(stripModuleSignature(signed), body);
  assert.deepEqual(stripModuleSignature(body), body);
});
