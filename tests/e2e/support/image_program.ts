/**
 * The node image as the real-kernel tests run it: built by `deno task image`'s builder
 * (cached), its root filesystem unpacked from the OCI archive (layers in manifest order), and
 * the entry point run from that root in a chroot with the DaemonSet's mounts: the manifest
 * folder (read-only, as a ConfigMap volume), /run/xtables.lock and /lib/modules.
 */
import {
  buildImage,
  type BuiltImage,
  type ChrootBind,
  chrootCommand,
  ENTRYPOINT_PATH,
  type OciArchiveImage,
  unpackOciArchive,
} from "../../../scripts/image/mod.ts";
import assert from "node:assert/strict";
import type { ProxyModeName } from "../../../lib/backends/mod.ts";
import type { ProxyProgram, Topology } from "../../../scripts/netns/mod.ts";
import { httpGet } from "./env_proxy.ts";
import { mentionsProxyChain } from "./kube_chains.ts";
import { MANIFEST_ROOT, runProxyOnce } from "./proxy_process.ts";
import type { ProxyContext } from "./with_proxy.ts";

/** The host paths a proxy container sees, at the same paths. */
export const IMAGE_BINDS: readonly ChrootBind[] = [
  { path: MANIFEST_ROOT, readOnly: true },
  { path: "/run/xtables.lock", file: true },
  { path: "/lib/modules", readOnly: true },
];

/** An unpacked image: what was built and where its root filesystem is. */
export interface ImageRootfs {
  readonly built: BuiltImage;
  /** What the archive's index, manifest and config say. */
  readonly image: OciArchiveImage;
  readonly root: string;
  /** Removes the root filesystem. */
  remove(): Promise<void>;
}

/** Builds the image (cached parts reused) and unpacks its archive into a new folder. */
export async function unpackedImage(parent = "/tmp"): Promise<ImageRootfs> {
  const built = await buildImage({ log: (line) => console.log(line) });
  const root = await Deno.makeTempDir({ dir: parent, prefix: "deno-kube-proxy-image-root-" });
  try {
    const image = await unpackOciArchive(built.archive, root);
    return { built, image, root, remove: () => Deno.remove(root, { recursive: true }) };
  } catch (err) {
    await Deno.remove(root, { recursive: true }).catch(() => {});
    throw err;
  }
}

/** The image's entry point run from `root`, as the proxy of spawnProxy and runProxyOnce. */
export function imageProgram(root: string, binds = IMAGE_BINDS): ProxyProgram {
  return {
    cmd: "unshare",
    args: (args) => chrootCommand(root, [ENTRYPOINT_PATH, ...args], binds).args,
  };
}

async function lines(topo: Topology, cmd: string, args: string[]): Promise<string[]> {
  const out = await topo.exec("node", cmd, args);
  assert.equal(out.code, 0, `${cmd} ${args.join(" ")} exited ${out.code}: ${out.stderr}`);
  return out.stdout.split("\n");
}

/** What `mode` programs on the node, as its own tools print it; empty after `--cleanup`. */
export async function proxyState(topo: Topology, mode: ProxyModeName): Promise<string[]> {
  const chains = (await lines(topo, "iptables-legacy-save", [])).filter(mentionsProxyChain);
  if (mode === "iptables") return chains;
  if (mode === "nftables") {
    return (await lines(topo, "nft", ["list", "tables"])).filter((l) => /\bkube-proxy\b/.test(l));
  }
  const servers = (await lines(topo, "ipvsadm", ["-Ln"])).filter((l) => /^(TCP|UDP|SCTP) /.test(l));
  const sets = (await lines(topo, "ipset", ["list", "-n"])).filter((l) => l.startsWith("KUBE-"));
  const link = await topo.exec("node", "ip", ["link", "show", "kube-ipvs0"]);
  return [...chains, ...servers, ...sets, ...(link.code === 0 ? ["link kube-ipvs0"] : [])];
}

/**
 * Checks for a running proxy: /healthz and /metrics answer (with the nfacct counters in
 * iptables mode) and sysctl was found; then it is stopped and `--cleanup`, run by `program`, must leave none of `mode`'s state.
 */
export function healthThenCleanup(mode: ProxyModeName, program: ProxyProgram) {
  return async ({ topo, proxy }: ProxyContext): Promise<void> => {
    const healthz = await httpGet(topo, "http://127.0.0.1:10256/healthz");
    assert.equal(healthz.status, 200, `/healthz answered ${healthz.status}: ${healthz.body}`);
    const metrics = await httpGet(topo, "http://127.0.0.1:10249/metrics");
    assert.equal(metrics.status, 200, `/metrics answered ${metrics.status}`);
    assert.match(metrics.body, /^kubeproxy_sync_proxy_rules_duration_seconds_count/m);
    if (mode === "iptables") {
      // The image's nfacct feeds iptables mode's two packet counters.
      assert.match(metrics.body, /^kubeproxy_iptables_ct_state_invalid_dropped_packets_total \d/m);
    }
    // Every kernel setting goes through the image's sysctl (procps), which must be there. (A
    // kernel may still refuse a value in a namespace, e.g. nf_conntrack_max outside the first.)
    assert.doesNotMatch(proxy.output(), /Could not set .*sysctl.*command not found/);
    assert.notDeepEqual(await proxyState(topo, mode), [], "rules before --cleanup");
    await proxy.kill();
    const cleanup = await runProxyOnce(topo, ["--cleanup"], program);
    assert.equal(cleanup.code, 0, `--cleanup exited ${cleanup.code}: ${cleanup.stderr}`);
    assert.deepEqual(await proxyState(topo, mode), [], "left after --cleanup");
  };
}
