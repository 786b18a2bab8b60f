/**
 * Continuity through a rolling update, in iptables and nftables mode, with real packets (IPVS
 * mode runs the same case in the qemu guest, tests/ipvs_guest/continuity_guest.ts): each old
 * endpoint turns terminating as its replacement becomes ready, then goes; a client at 50
 * connections/s through the ClusterIP sees no failure, an ETP=Local NodePort whose only local
 * endpoint is terminating still reaches it, and a connection held to a terminating endpoint
 * keeps working until its removal. Needs root.
 */
import { MODES } from "./support/continuity.ts";
import { rollingCase } from "./support/continuity_rolling_case.ts";
import { SERVER_PODS, withContinuityStage } from "./support/continuity_stage.ts";

const [p1, p2, p3, p4, p5, p6] = SERVER_PODS;

for (const { mode, tag, commands } of MODES) {
  Deno.test(`e2e continuity (${mode}): a rolling update of a 3-endpoint service fails no connection through its ClusterIP or an ETP=Local NodePort, and a held connection lives until its endpoint goes`, async () => {
    await withContinuityStage({ prefix: `ct9${tag}w`, mode, commands }, async (stage) => {
      await rollingCase(stage, {
        vip: "172.30.0.20",
        old: [p1, p2, p3],
        fresh: [p4, p5, p6],
        intervalMs: 20,
      });
    });
  });
}
