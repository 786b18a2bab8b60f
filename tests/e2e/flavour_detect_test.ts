/**
 * Which iptables the node uses, found on a real kernel at a restart: legacy tables full of a
 * previous run's rules and kubelet's hint in legacy mangle. Detection must find the hint without
 * copying the nat table into the program, and must never create a legacy table (`-t mangle` on
 * a node without one would). It runs in a child process inside a namespace of its own
 * (`kfd-<pid>`), under the program's own permission set (deno.json's "proxy"), which cannot
 * read /proc. Needs root, iproute2 and iptables-legacy; fails loudly without them.
 */
import assert from "node:assert/strict";
import { denoCommandRunner } from "../../lib/exec/mod.ts";
import {
  addNamespaces,
  deleteNamespaces,
  requireCommands,
  requireNetnsSupport,
} from "../../scripts/netns/mod.ts";

const NS = `kfd-${Deno.pid}`;
const CONFIG = new URL("../../deno.json", import.meta.url).pathname;
const FLAVOUR_MODULE = new URL("../../lib/netfilter/mod.ts", import.meta.url).href;
const START_CHECK_MODULE = new URL("../../lib/backends/common/mod.ts", import.meta.url).href;
const EXEC_MODULE = new URL("../../lib/exec/mod.ts", import.meta.url).href;

/** Detects in the namespace; reports the flavour and how much save output reached the program. */
const DETECT = `
import { detectIptablesFlavour } from "${FLAVOUR_MODULE}";
import { denoCommandRunner } from "${EXEC_MODULE}";
let chars = 0;
const flavour = await detectIptablesFlavour(async (input) => {
  const out = await denoCommandRunner(input);
  chars += out.stdout.length;
  return out;
});
console.log(JSON.stringify({ flavour, chars }));
`;

async function inNamespace(cmd: string, args: string[], stdin?: string): Promise<string> {
  const input = { cmd: "ip", args: ["netns", "exec", NS, cmd, ...args] };
  const out = await denoCommandRunner(stdin === undefined ? input : { ...input, stdin });
  assert.equal(out.code, 0, `${cmd} ${args.join(" ")}: ${out.stderr}`);
  return out.stdout;
}

/** The start checks of iptables mode, in order; reports the flavour and the families. */
const START_CHECKS = `
import { detectIptablesFlavour, usableFamilies } from "${FLAVOUR_MODULE}";
import { requireIptables } from "${START_CHECK_MODULE}";
import { denoCommandRunner } from "${EXEC_MODULE}";
await requireIptables(denoCommandRunner);
const flavour = await detectIptablesFlavour(denoCommandRunner);
const families = await usableFamilies(denoCommandRunner, flavour);
console.log(JSON.stringify({ flavour, families }));
`;

/** Runs a script in the namespace as the program runs: `deno run -P=proxy`. */
async function runAsProxy(script: string): Promise<string> {
  const file = await Deno.makeTempFile({ prefix: "kfd-", suffix: ".ts" });
  try {
    await Deno.writeTextFile(file, script);
    return await inNamespace(Deno.execPath(), [
      "run",
      `--config=${CONFIG}`,
      "-P=proxy",
      "--quiet",
      file,
    ]);
  } finally {
    await Deno.remove(file);
  }
}

const tables = async () => (await inNamespace("cat", ["/proc/self/net/ip_tables_names"])).trim();
const detect = async () =>
  JSON.parse(await runAsProxy(DETECT)) as { flavour: string; chars: number };

const startChecks = async () =>
  JSON.parse(await runAsProxy(START_CHECKS)) as { flavour: string; families: string[] };

/** A nat table like a previous run's: `n` service chains with a rule each. */
function natRules(n: number): string {
  const lines = ["*nat", ":KUBE-SERVICES - [0:0]"];
  for (let i = 0; i < n; i++) lines.push(`:KUBE-SVC-${String(i).padStart(16, "0")} - [0:0]`);
  for (let i = 0; i < n; i++) {
    const chain = `KUBE-SVC-${String(i).padStart(16, "0")}`;
    lines.push(`-A KUBE-SERVICES -d 172.30.${i >> 8}.${i & 255}/32 -p tcp --dport 80 -j ${chain}`);
  }
  lines.push("COMMIT", "");
  return lines.join("\n");
}

Deno.test("e2e: flavour detection reads legacy hints without the nat table, creating no table", async () => {
  await requireNetnsSupport();
  requireCommands(["iptables-legacy-save", "iptables-legacy-restore", "iptables-nft-save"]);
  await deleteNamespaces([NS]);
  await addNamespaces([NS]);
  try {
    // No hint anywhere: decided by rule count, and legacy still has no mangle table after.
    await inNamespace("iptables-legacy-restore", ["--noflush"], natRules(2000));
    const counted = await detect();
    assert.equal(counted.flavour, "legacy");
    assert.equal(await tables(), "nat");

    // kubelet's hint in legacy mangle, next to 2,000 services' worth of nat (~190 KB of save).
    await inNamespace("iptables-legacy", ["-t", "mangle", "-N", "KUBE-IPTABLES-HINT"]);
    const nat = await inNamespace("iptables-legacy-save", ["-t", "nat"]);
    assert.ok(nat.length > 150_000, `nat save is ${nat.length} chars`);
    const hinted = await detect();
    assert.equal(hinted.flavour, "legacy");
    assert.ok(hinted.chars < 5_000, `detection read ${hinted.chars} chars of save output`);
    assert.equal(await tables(), "mangle\nnat");
  } finally {
    await deleteNamespaces([NS]);
  }
});

Deno.test("e2e: on an iptables-nft node the start checks pick nft and create no legacy table", async () => {
  await requireNetnsSupport();
  requireCommands([
    "iptables-nft",
    "iptables-nft-restore",
    "ip6tables-nft",
    "iptables-legacy-save",
  ]);
  await deleteNamespaces([NS]);
  await addNamespaces([NS]);
  try {
    // kubelet's hint in nft mangle and a previous run's nat rules; no legacy table at all.
    await inNamespace("iptables-nft", ["-t", "mangle", "-N", "KUBE-IPTABLES-HINT"]);
    await inNamespace("iptables-nft-restore", ["--noflush"], natRules(2000));
    assert.equal(await tables(), "");
    assert.deepEqual(await startChecks(), { flavour: "nft", families: ["IPv4", "IPv6"] });
    // A legacy nat table here would make every iptables-nft command warn about legacy tables.
    assert.equal(await tables(), "", "the start checks created a legacy table");
    const save = await inNamespace("iptables-nft-save", []);
    assert.doesNotMatch(save, /iptables-legacy tables present/);
  } finally {
    await deleteNamespaces([NS]);
  }
});
