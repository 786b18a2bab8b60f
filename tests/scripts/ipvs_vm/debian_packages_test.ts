import assert from "node:assert/strict";
import { kernelRelease, parseKernelDepends } from "../../../scripts/ipvs_vm/mod.ts";

Deno.test("parseKernelDepends() finds the generic kernel package apt-cache names", () => {
  const out = "linux-image-amd64\n  Depends: linux-image-6.1.0-56-amd64\n";
  assert.equal(parseKernelDepends(out), "linux-image-6.1.0-56-amd64");
  assert.equal(kernelRelease("linux-image-6.1.0-56-amd64"), "6.1.0-56-amd64");
});

Deno.test("parseKernelDepends() ignores other flavours and says null when none is named", () => {
  assert.equal(parseKernelDepends("  Depends: linux-image-6.1.0-56-cloud-amd64\n"), null);
  assert.equal(parseKernelDepends("E: No packages found\n"), null);
});
