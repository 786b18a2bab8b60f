/**
 * Runs INSIDE the IPVS guest (tests/e2e/ipvs_guest_test.ts boots it): the continuity cases of
 * tests/e2e/continuity_*_test.ts in IPVS mode, with real packets, on one stage and one proxy
 * run to spare emulated start-ups (the restart case replaces the proxy). Each case prints its
 * counts (sent, failed, longest gap); with CONTINUITY_REPORT=stdout they also go out as rows
 * for bench/continuity_bench.ts. IPVS mode's own case rides on the rolling update: one more
 * client asks for 200 short connections/s through a second service over the same pods, cycling
 * through a pool of source ports, so each port comes back while IPVS still holds its last
 * connection (TIME_WAIT), under the mode's default sysctls (conn_reuse_mode left at the
 * kernel's 1 on 5.9+, as upstream).
 * CONTINUITY_CASES (comma-separated: udp, restart, rolling) runs only those, to iterate.
 * Named `*_guest.ts` so the host's `deno test` skips it.
 * IP plan: node 192.168.0.2, pods 10.0.1.2-10.0.8.2, node2's pod 10.1.1.2, services
 * 172.30.0.0/16, external client 203.0.113.2.
 */
import { dumpModeState, E2E_MODES } from "../e2e/support/e2e_modes.ts";
import { restartCase } from "../e2e/support/continuity_restart_case.ts";
import { rollingCase } from "../e2e/support/continuity_rolling_case.ts";
import {
  type ContinuityStage,
  SERVER_PODS,
  withContinuityStage,
} from "../e2e/support/continuity_stage.ts";
import { udpFollowCase } from "../e2e/support/continuity_udp_case.ts";
import {
  ipvsConnectionStates,
  ipvsSysctls,
  memAvailable,
  withConntrackMax,
} from "./support/continuity_ipvs.ts";

const [p1, p2, p3, p4, p5, p6] = SERVER_PODS;
/**
 * The main TCP clients' interval: 25 connections/s per target. One emulated vCPU carries about
 * 50 connections/s in all beside a starting proxy; at 50/s per target (100/s with the NodePort
 * client) the clients starved the proxy's restart and timed out.
 */
const GUEST_TCP_INTERVAL_MS = 40;
/** The port-reuse case's client: 200 connections/s. */
const REUSE_INTERVAL_MS = 5;
/**
 * Its source ports: 50, so at most 50 connections are in flight beside the rolling update's
 * other clients on the one emulated vCPU; each port comes back within seconds, well inside
 * IPVS's 2-minute TIME_WAIT. A tick whose ports are all in use on the client is skipped and
 * counted, so the rate the client kept is what the emulated machine sustained.
 */
const REUSE_PORTS = "41000-41049";
const REUSE_VIP = "172.30.0.30";
const only = Deno.env.get("CONTINUITY_CASES")?.split(",").map((c) => c.trim());
const runs = (name: string) => !only || only.includes(name);

Deno.test("guest [ipvs]: traffic continuity through UDP endpoint churn, restarts and rolling updates", async (t) => {
  const support = E2E_MODES.ipvs;
  const started = Date.now();
  await withConntrackMax(() =>
    withContinuityStage({
      prefix: "vcct",
      mode: "ipvs",
      commands: support.commands,
      tcpIntervalMs: GUEST_TCP_INTERVAL_MS,
      servers: [p1.name, p2.name],
    }, async (stage: ContinuityStage) => {
      const step = (name: string, body: () => Promise<void>) =>
        t.step(name, async () => {
          const at = Date.now();
          try {
            await body();
          } catch (err) {
            console.error(`--- ${name} failed: ${(err as Error).message}`);
            console.error(`--- proxy output (tail)\n${stage.running.output().slice(-6000)}`);
            console.error(await dumpModeState(stage.topo, support));
            throw err;
          } finally {
            console.log(`  (${name}: ${Date.now() - at} ms; ${await memAvailable()})`);
          }
        });
      if (runs("udp")) {
        await step(
          "a UDP sender keeping its source port follows deletion, scale to zero and return",
          () => udpFollowCase(stage),
        );
      }
      if (runs("restart")) {
        await step("restarts fail no connection and keep UDP flows on serving endpoints", () =>
          restartCase(stage));
      }
      if (runs("rolling")) {
        await step(
          "a rolling update fails no connection, also at 200 connections/s reusing source ports",
          async () => {
            console.log(`    ${await ipvsSysctls(stage.topo)}`);
            await rollingCase(stage, {
              vip: "172.30.0.20",
              old: [p1, p2, p3],
              fresh: [p4, p5, p6],
              intervalMs: GUEST_TCP_INTERVAL_MS,
              reuse: {
                vip: REUSE_VIP,
                intervalMs: REUSE_INTERVAL_MS,
                sourcePorts: REUSE_PORTS,
                observe: () =>
                  ipvsConnectionStates(stage.topo, `${REUSE_VIP}:80`, REUSE_PORTS),
              },
            });
          },
        );
      }
    })
  );
  console.log(`continuity_guest.ts: ${Date.now() - started} ms in the guest`);
});
