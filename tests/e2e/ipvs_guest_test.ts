/**
 * IPVS mode's real-kernel tests: this machine's kernel has no IPVS, so one qemu guest booted
 * from Debian's kernel (scripts/ipvs_vm) runs every `tests/ipvs_guest/*_guest.ts` file in one
 * `deno test` inside it, with the host's files shared read-only. A missing qemu or kernel
 * package fails this test; it never skips. `IPVS_GUEST_FILES` (comma-separated file names, such
 * as `image_guest.ts`) runs only those files, to iterate on one; unset, every file runs.
 */
import assert from "node:assert/strict";
import { startIpvsGuest } from "../../scripts/ipvs_vm/mod.ts";
import { GUEST_MODULES } from "../../scripts/ipvs_vm/modules.ts";
import { unpackedImage } from "./support/image_program.ts";

const REPO_ROOT = decodeURIComponent(new URL("../../", import.meta.url).pathname);
const GUEST_DIR = `${REPO_ROOT}tests/ipvs_guest`;
/**
 * The whole in-guest suite, which runs beside the host's tests (scripts/run_tests.sh) and must
 * leave the test task within ~15 minutes.
 */
const SUITE_TIMEOUT_MS = 13 * 60_000;
const encoder = new TextEncoder();
/**
 * nftables mode's expressions beyond GUEST_MODULES (reject, fib and numgen in ip/ip6 tables),
 * so nftables mode runs in the guest too (switches between nftables and IPVS mode).
 */
const NFTABLES_MODE_MODULES = [
  "nft_reject_ipv4",
  "nft_reject_ipv6",
  "nft_fib_ipv4",
  "nft_fib_ipv6",
  "nft_numgen",
];

async function guestTestFiles(): Promise<string[]> {
  const only = Deno.env.get("IPVS_GUEST_FILES")?.split(",").map((f) => f.trim()).filter((f) =>
    f !== ""
  );
  const files: string[] = [];
  for await (const e of Deno.readDir(GUEST_DIR)) {
    if (!e.isFile || !e.name.endsWith("_guest.ts")) continue;
    if (only && only.length > 0 && !only.includes(e.name)) continue;
    files.push(`tests/ipvs_guest/${e.name}`);
  }
  return files.sort();
}

Deno.test("e2e: the IPVS guest suite passes inside a real IPVS kernel", async () => {
  const files = await guestTestFiles();
  assert.ok(
    files.length > 0,
    `No *_guest.ts files in "${GUEST_DIR}" (IPVS_GUEST_FILES="${
      Deno.env.get("IPVS_GUEST_FILES") ?? ""
    }")`,
  );
  // The guest has no network: whatever the files import must already be in the host's cache.
  const cached = await new Deno.Command(Deno.execPath(), {
    args: ["cache", ...files],
    cwd: REPO_ROOT,
  })
    .output();
  assert.equal(cached.code, 0, "deno cache of the guest test files failed");
  // The node image's root filesystem, unpacked from its OCI archive where the guest sees it
  // (the host's files are the guest's): image_guest.ts runs the program from it.
  const image = await unpackedImage();
  const launched = Date.now();
  const modules = [
    ...GUEST_MODULES,
    ...NFTABLES_MODE_MODULES.filter((m) => !GUEST_MODULES.includes(m)),
  ];
  const guest = await startIpvsGuest({ prepare: { modules } }).catch(async (err) => {
    await image.remove();
    throw err;
  });
  try {
    console.log(`IPVS guest ready in ${guest.bootMs} ms; running ${files.length} file(s)`);
    // Type-checking happens on the host (`deno check tests/`); under emulation it is slow.
    const out = await guest.run({
      cmd: Deno.execPath(),
      args: ["test", "-A", "--no-check", ...files],
      cwd: REPO_ROOT,
      // One emulated vCPU: deno processes start several times slower than on the host.
      env: { NO_COLOR: "1", E2E_TIME_SCALE: "5", IMAGE_ROOTFS: image.root },
      timeoutMs: SUITE_TIMEOUT_MS,
    }, {
      onOutput: (stream, text) =>
        (stream === "stdout" ? Deno.stdout : Deno.stderr).writeSync(encoder.encode(text)),
    });
    if (out.code !== 0) console.error(`--- guest console\n${(await guest.console()).slice(-4000)}`);
    assert.equal(out.code, 0, `deno test in the IPVS guest exited ${out.code}`);
  } finally {
    await guest.stop();
    await image.remove();
    console.log(`IPVS guest total ${Date.now() - launched} ms`);
  }
});
