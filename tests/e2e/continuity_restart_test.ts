/**
 * Continuity across proxy restarts, in iptables and nftables mode, with real packets (IPVS mode
 * runs the same case in the qemu guest, tests/ipvs_guest/continuity_guest.ts): SIGTERM and
 * start with unchanged state, then kill -9 around a sync with a change made while the proxy was
 * down. TCP clients at 50 connections/s to a ClusterIP and a NodePort and a UDP stream keep
 * going; the unchanged restart deletes no UDP flow, the changed one only the stale one. Needs
 * root.
 */
import { MODES } from "./support/continuity.ts";
import { restartCase } from "./support/continuity_restart_case.ts";
import { withContinuityStage } from "./support/continuity_stage.ts";

for (const { mode, tag, commands } of MODES) {
  Deno.test(`e2e continuity (${mode}): restarts (SIGTERM unchanged, kill -9 with changes made while down) fail no connection and keep UDP flows on serving endpoints`, async () => {
    await withContinuityStage({ prefix: `ct9${tag}r`, mode, commands }, restartCase);
  });
}
