/**
 * The kernel modules the IPVS guest loads, and the pure helpers that turn a kernel's
 * `modules.dep` into an insmod order and strip appended module signatures.
 */

/**
 * Modules the guest needs on top of Debian's built-ins: virtio + 9p to reach the host's files,
 * overlay for a writable root, and everything kube-proxy's IPVS, iptables and ipset rules use.
 */
export const GUEST_MODULES: readonly string[] = [
  // libcrc32c (needed by nf_conntrack, sctp) finds crc32c through the crypto API, not by a
  // symbol, so modules.dep does not order it: load it first.
  "crc32c_generic",
  "virtio_pci",
  "9pnet_virtio",
  "9p",
  "overlay",
  "dummy",
  "veth",
  "bridge",
  "br_netfilter",
  "nf_conntrack",
  "nf_conntrack_netlink",
  "nf_nat",
  "ip_vs",
  "ip_vs_rr",
  "ip_vs_wrr",
  "ip_vs_lc",
  "ip_vs_wlc",
  "ip_vs_sh",
  "ip_vs_dh",
  "ip_vs_sed",
  "ip_vs_nq",
  "xt_ipvs",
  "ip_set",
  "ip_set_hash_ip",
  "ip_set_hash_ipport",
  "ip_set_hash_ipportip",
  "ip_set_hash_ipportnet",
  "ip_set_hash_net",
  "ip_set_hash_netport",
  "ip_set_bitmap_port",
  "xt_set",
  "ip_tables",
  "iptable_nat",
  "iptable_filter",
  "iptable_mangle",
  "iptable_raw",
  "ip6_tables",
  "ip6table_nat",
  "ip6table_filter",
  "ip6table_mangle",
  "ip6table_raw",
  "ipt_REJECT",
  "ip6t_REJECT",
  "nf_tables",
  "nft_compat",
  "nft_chain_nat",
  "nft_ct",
  "nft_nat",
  "nft_masq",
  "nft_reject_inet",
  "xt_MASQUERADE",
  "xt_conntrack",
  "xt_comment",
  "xt_mark",
  "xt_addrtype",
  "xt_nat",
  "xt_multiport",
  "xt_statistic",
  "xt_tcpudp",
  "xt_physdev",
  "xt_recent",
  "sctp",
];

/** One module's file (relative to /lib/modules/VERSION) and the files it depends on. */
export interface ModuleDep {
  readonly path: string;
  readonly deps: readonly string[];
}

/** The canonical module name of a path or name: basename without `.ko*`, `-` as `_`. */
export function moduleName(pathOrName: string): string {
  const base = pathOrName.slice(pathOrName.lastIndexOf("/") + 1);
  return base.replace(/\.ko(\.(xz|gz|zst))?$/, "").replaceAll("-", "_");
}

/** Parses `modules.dep` (`path: dep dep ...` per line) into a map from module name. */
export function parseModulesDep(text: string): Map<string, ModuleDep> {
  const out = new Map<string, ModuleDep>();
  for (const line of text.split("\n")) {
    const colon = line.indexOf(":");
    if (colon <= 0) continue;
    const path = line.slice(0, colon).trim();
    const deps = line.slice(colon + 1).trim().split(/\s+/).filter((d) => d !== "");
    out.set(moduleName(path), { path, deps });
  }
  return out;
}

/**
 * The module files to insmod, each after every module it depends on, for the wanted names.
 * Throws naming a wanted module the kernel does not ship (a built-in one is not listed in
 * modules.dep: pass `builtin` so it is silently satisfied).
 */
export function moduleLoadOrder(
  deps: ReadonlyMap<string, ModuleDep>,
  wanted: readonly string[],
  builtin: ReadonlySet<string> = new Set(),
): string[] {
  const order: string[] = [];
  const done = new Set<string>();
  const visiting = new Set<string>();
  const visit = (name: string, wantedBy: string | null) => {
    if (done.has(name)) return;
    const dep = deps.get(name);
    if (!dep) {
      if (builtin.has(name)) return;
      const by = wantedBy === null ? "" : ` (needed by "${wantedBy}")`;
      throw new Error(`Unknown kernel module "${name}"${by}: not in modules.dep nor built in`);
    }
    if (visiting.has(name)) throw new Error(`Dependency cycle through kernel module "${name}"`);
    visiting.add(name);
    for (const d of dep.deps) visit(moduleName(d), name);
    visiting.delete(name);
    done.add(name);
    order.push(dep.path);
  };
  for (const name of wanted) visit(moduleName(name), null);
  return order;
}

/** Names of built-in modules from `modules.builtin` (one path per line). */
export function parseModulesBuiltin(text: string): Set<string> {
  return new Set(text.split("\n").filter((l) => l.trim() !== "").map((l) => moduleName(l.trim())));
}

const SIG_MAGIC = new TextEncoder().encode("~Module signature appended~\n");
/** struct module_signature: 8 one-byte fields, 3 padding bytes... ending with a BE u32 length. */
const SIG_INFO_LEN = 12;

/**
 * The module without its appended signature (when it has one); loading an unsigned module
 * skips the signature check, which is slow under emulation. The kernel then says "tainted".
 */
export function stripModuleSignature(ko: Uint8Array): Uint8Array {
  const magicAt = ko.length - SIG_MAGIC.length;
  if (magicAt < SIG_INFO_LEN) return ko;
  for (let i = 0; i < SIG_MAGIC.length; i++) {
    if (ko[magicAt + i] !== SIG_MAGIC[i]) return ko;
  }
  const info = magicAt - SIG_INFO_LEN;
  const sigLen = new DataView(ko.buffer, ko.byteOffset + info + 8, 4).getUint32(0, false);
  const end = info - sigLen;
  if (end <= 0) return ko;
  return ko.subarray(0, end);
}
