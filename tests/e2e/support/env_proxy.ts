/**
 * Running the real program with a changed environment, for the health and process tests: a
 * PATH whose first folder holds a switchable wrapper of the mode's apply binary (so every apply,
 * e.g. `iptables-legacy-restore`, can be made to fail, as a broken kernel or a locked xtables
 * would), plus scraping its HTTP endpoints from inside the node namespace.
 */
import type { Topology } from "../../../scripts/netns/mod.ts";
import { E2E_MODES, type E2EModeSupport } from "./e2e_modes.ts";
import { MANIFEST_ROOT } from "./proxy_process.ts";

/** A folder put first in the proxy's PATH, whose apply binary can be made to fail. */
export interface RestoreSwitch {
  readonly dir: string;
  /** While on, every restore exits 1 with a message instead of touching the kernel. */
  fail(on: boolean): Promise<void>;
  remove(): Promise<void>;
}

/**
 * Creates the wrapper folder `name` under MANIFEST_ROOT for `mode`'s apply binary (default
 * iptables mode's restore); applies work until fail(true), other calls always work.
 */
export async function createRestoreSwitch(
  name: string,
  mode: E2EModeSupport = E2E_MODES.iptables,
): Promise<RestoreSwitch> {
  const { binary, argsPattern } = mode.apply;
  const real = new Deno.Command("sh", { args: ["-c", `command -v ${binary}`] }).outputSync();
  const realPath = new TextDecoder().decode(real.stdout).trim();
  if (real.code !== 0 || realPath === "") throw new Error(`${binary} not found`);
  const dir = `${MANIFEST_ROOT}/${name}`;
  await Deno.remove(dir, { recursive: true }).catch(() => {});
  await Deno.mkdir(dir, { recursive: true });
  const flag = `${dir}/fail`;
  const script = `#!/bin/sh
# Test wrapper: fails every apply while ${flag} exists.
if [ -e ${flag} ]; then
  case "$*" in
    ${argsPattern})
      cat >/dev/null
      echo "${binary}: line 1 failed (injected by the test)" >&2
      exit 1
      ;;
  esac
fi
exec ${realPath} "$@"
`;
  await Deno.writeTextFile(`${dir}/${binary}`, script, { mode: 0o755 });
  return {
    dir,
    async fail(on) {
      if (on) await Deno.writeTextFile(flag, "");
      else await Deno.remove(flag).catch(() => {});
    },
    remove: () => Deno.remove(dir, { recursive: true }).catch(() => {}),
  };
}

/** GETs `url` from inside the node namespace; status 0 when nothing answered. */
export async function httpGet(
  topo: Topology,
  url: string,
): Promise<{ status: number; body: string }> {
  const out = await topo.exec("node", "curl", [
    "-s",
    "--max-time",
    "3",
    "-w",
    "\n%{http_code}",
    url,
  ]);
  if (out.code !== 0) return { status: 0, body: "" };
  const at = out.stdout.lastIndexOf("\n");
  return { status: Number(out.stdout.slice(at + 1)), body: out.stdout.slice(0, at) };
}

/** The value of one sample (`name{labels}` exactly as exposed), or null when absent. */
export function sample(metrics: string, series: string): number | null {
  for (const line of metrics.split("\n")) {
    if (line.startsWith(series + " ")) return Number(line.slice(series.length + 1));
  }
  return null;
}
