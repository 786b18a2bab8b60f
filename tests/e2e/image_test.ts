/**
 * The node image, started: `deno task image`'s builder makes the OCI archive (cached parts
 * reused), the root filesystem is unpacked from the archive alone, and the program runs from it
 * in a chroot in the topology's node namespace, with nothing of the host's but the kernel and
 * the DaemonSet's mounts. In iptables and nftables mode it must program its rules (ClusterIP,
 * NodePort and UDP flows, and the localhost NodePort that needs `sysctl` for route_localnet),
 * answer /healthz and /metrics, and remove everything with `--cleanup` run from the image.
 * Namespace prefixes start with "im". Needs root, mmdebstrap and the npm registry on a cold
 * cache; fails loudly without them. IP plan: tests/e2e/flows/packet_flows.ts.
 */
import assert from "node:assert/strict";
import { ENTRYPOINT_PATH, imageReference, REF_NAME_ANNOTATION } from "../../scripts/image/mod.ts";
import { PACKET_FLOW_TABLES } from "./flows/packet_flows.ts";
import type { FlowTable } from "./support/flow_table.ts";
import { runFlowTable } from "./support/flow_table.ts";
import {
  healthThenCleanup,
  imageProgram,
  type ImageRootfs,
  unpackedImage,
} from "./support/image_program.ts";

const REPO_ROOT = decodeURIComponent(new URL("../../", import.meta.url).pathname);
const VERSION = JSON.parse(Deno.readTextFileSync(`${REPO_ROOT}deno.json`)).version as string;

function tableByStem(stem: string): FlowTable {
  const table = PACKET_FLOW_TABLES.find((t) => t.stem === stem);
  if (table === undefined) throw new Error(`No packet-flow table with stem "${stem}"`);
  return table;
}

/** TCP and UDP to a ClusterIP and a NodePort, hairpins included. */
const PROTO_TABLE = tableByStem("fproto");
/** The ETP Cluster cases of the traffic-policy table (one is the localhost NodePort). */
const ETP_CLUSTER_TABLE: FlowTable = {
  ...tableByStem("fetp"),
  cases: tableByStem("fetp").cases.filter((c) => c.name.startsWith("ETP Cluster:")),
};

let unpacked: ImageRootfs | undefined;

/** The image's root filesystem, built and unpacked once for the whole file. */
async function image(): Promise<ImageRootfs> {
  unpacked ??= await unpackedImage();
  return unpacked;
}

Deno.test("image: the OCI archive is named and started as the DaemonSet expects", async () => {
  const { built, image: oci, root } = await image();
  assert.equal(built.reference, imageReference(VERSION));
  assert.equal(oci.annotations[REF_NAME_ANNOTATION], `localhost/deno-kube-proxy:${VERSION}`);
  assert.equal(oci.manifestDigest, built.manifestDigest);
  assert.deepEqual(oci.config.Entrypoint, [ENTRYPOINT_PATH]);
  assert.equal(oci.config.Cmd, undefined, "the DaemonSet's args are the whole command line");
  const version = await new Deno.Command("unshare", {
    args: imageProgram(root).args(["--version"]),
    stdin: "null",
  }).output();
  const said = new TextDecoder().decode(version.stdout).trim();
  assert.equal(version.code, 0, new TextDecoder().decode(version.stderr));
  assert.match(said, new RegExp(`^deno-kube-proxy .*${VERSION.replaceAll(".", "\\.")}`));
});

for (const [mode, letter] of [["iptables", "t"], ["nftables", "n"]] as const) {
  Deno.test(`e2e image [${mode}]: ${PROTO_TABLE.name}`, async () => {
    const program = imageProgram((await image()).root);
    await runFlowTable(mode, PROTO_TABLE, { prefix: `im${letter}prot`, program });
  });

  Deno.test(`e2e image [${mode}]: ETP Cluster flows, /healthz, /metrics, --cleanup`, async () => {
    const program = imageProgram((await image()).root);
    await runFlowTable(mode, ETP_CLUSTER_TABLE, {
      prefix: `im${letter}etp`,
      program,
      afterCases: healthThenCleanup(mode, program),
    });
  });
}

Deno.test("image: the unpacked root filesystem is removed", async () => {
  await unpacked?.remove();
  unpacked = undefined;
});
