/**
 * Builds the IPVS guest's boot files into the cache if they are missing (run by
 * scripts/install_test_deps.sh, so the first test run does not pay for it mid-suite):
 *
 *   deno run -A scripts/ipvs_vm/prepare_main.ts
 */
import { prepareGuestImage } from "./mod.ts";

if (import.meta.main) {
  const image = await prepareGuestImage();
  console.error(`ipvs-vm: boot files ready (${image.kernel}, ${image.initrd})`);
}
