/**
 * Runs INSIDE the IPVS guest (tests/e2e/ipvs_guest_test.ts builds the image, unpacks its root
 * filesystem from the OCI archive to the host path in IMAGE_ROOTFS, boots the guest and runs
 * this file): the image's entry point, run from that root in a chroot in the node namespace,
 * in ipvs mode. ClusterIP and NodePort flows over TCP and UDP must pass, /healthz and /metrics
 * answer, and `--cleanup` from the image removes the virtual servers, ipsets, chains and
 * kube-ipvs0. Named `*_guest.ts` so the host's `deno test` skips it.
 * IP plan: tests/e2e/flows/packet_flows.ts.
 */
import { PACKET_FLOW_TABLES } from "../e2e/flows/packet_flows.ts";
import { runFlowTable } from "../e2e/support/flow_table.ts";
import { healthThenCleanup, imageProgram } from "../e2e/support/image_program.ts";

/** Where the host unpacked the image; the guest sees the host's files under the same paths. */
function imageRoot(): string {
  const root = Deno.env.get("IMAGE_ROOTFS");
  if (root === undefined || root === "") {
    throw new Error(
      "IMAGE_ROOTFS is not set: run this file through tests/e2e/ipvs_guest_test.ts, which unpacks the image",
    );
  }
  try {
    Deno.statSync(`${root}/usr/local/bin/deno-kube-proxy`);
  } catch {
    throw new Error(`IMAGE_ROOTFS "${root}" holds no usr/local/bin/deno-kube-proxy`);
  }
  return root;
}

Deno.test("guest: the image in ipvs mode serves ClusterIP and NodePort flows, /healthz, --cleanup", async () => {
  const table = PACKET_FLOW_TABLES.find((t) => t.stem === "fproto");
  if (table === undefined) throw new Error('No packet-flow table with stem "fproto"');
  const program = imageProgram(imageRoot());
  await runFlowTable("ipvs", table, {
    prefix: "imvprot",
    program,
    afterCases: healthThenCleanup("ipvs", program),
  });
});
