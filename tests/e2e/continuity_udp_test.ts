/**
 * Continuity with real packets, in iptables and nftables mode (IPVS mode runs the same case in
 * the qemu guest, tests/ipvs_guest/continuity_guest.ts): a UDP sender that keeps its source
 * port (two-way, and one-way whose flow stays [UNREPLIED]) follows its endpoint's deletion
 * within one sync, loses its conntrack entries and is told the port is unreachable when the
 * service scales to zero, and resumes when an endpoint returns. Needs root.
 */
import { MODES } from "./support/continuity.ts";
import { withContinuityStage } from "./support/continuity_stage.ts";
import { udpFollowCase } from "./support/continuity_udp_case.ts";

for (const { mode, tag, commands } of MODES) {
  Deno.test(`e2e continuity (${mode}): a UDP sender keeping its source port follows endpoint deletion, scale to zero and return`, async () => {
    await withContinuityStage({ prefix: `ct9${tag}u`, mode, commands }, udpFollowCase);
  });
}
