/**
 * The shipped systemd units, read as systemd reads them (sections, directives, `$VAR`
 * expansion in ExecStart); tests/e2e/systemd_guest_test.ts starts them for real.
 */
import assert from "node:assert/strict";
import { parseCommandLine } from "../../lib/config/mod.ts";
import { MODE_CONFIG_SECTIONS } from "../../lib/backends/mod.ts";
import { only, readDeployText, readDeployYaml } from "./deploy_files.ts";

const configConf = only(readDeployYaml("kubernetes/daemonset.yaml"), "ConfigMap").data[
  "config.conf"
] as string;

/** A unit file as section -> directive -> values (a directive may repeat). */
type Unit = Map<string, Map<string, string[]>>;

/** Parses a unit file's text: comments, blank lines, sections and `Name=value` lines. */
function parseUnit(text: string): Unit {
  const unit: Unit = new Map();
  let section: Map<string, string[]> | undefined;
  for (const raw of text.split("\n")) {
    const line = raw.trim();
    if (line === "" || line.startsWith("#") || line.startsWith(";")) continue;
    const header = /^\[(.+)\]$/.exec(line);
    if (header) {
      section = new Map();
      unit.set(header[1]!, section);
      continue;
    }
    const eq = line.indexOf("=");
    assert.ok(section !== undefined && eq > 0, `Unexpected line "${line}"`);
    const name = line.slice(0, eq);
    section.set(name, [...section.get(name) ?? [], line.slice(eq + 1)]);
  }
  return unit;
}

function directive(unit: Unit, section: string, name: string): string[] {
  return unit.get(section)?.get(name) ?? [];
}

/**
 * ExecStart's words as systemd passes them: `%H` is the host name, an unbraced `$VAR` becomes
 * the variable's whitespace-separated words (none when unset or empty).
 */
function execArgs(line: string, env: Record<string, string>, hostname: string): string[] {
  return line.split(/\s+/).flatMap((word) => {
    const v = /^\$([A-Za-z_][A-Za-z0-9_]*)$/.exec(word);
    if (v) return (env[v[1]!] ?? "").split(/\s+/).filter((w) => w !== "");
    return [word.replaceAll("%H", hostname)];
  });
}

const unit = parseUnit(readDeployText("systemd/deno-kube-proxy.service"));
const cleanup = parseUnit(readDeployText("systemd/deno-kube-proxy-cleanup.service"));

/** parseCommandLine over the unit's files: the DaemonSet's config.conf, a manifest path. */
function parseUnitCommand(args: string[]) {
  return parseCommandLine(args, {
    modeSections: MODE_CONFIG_SECTIONS,
    readTextFile: (path) => {
      if (path !== "/var/lib/kube-proxy/config.conf") throw new Error(`Unexpected read "${path}"`);
      return configConf;
    },
    hostname: () => "not-the-node",
  });
}

Deno.test("deno-kube-proxy.service ExecStart is accepted by parseCommandLine() with no extra flags", () => {
  const execStart = directive(unit, "Service", "ExecStart");
  assert.equal(execStart.length, 1);
  const [binary, ...args] = execArgs(execStart[0]!, {}, "Node-1");
  assert.equal(binary, "/usr/local/bin/deno-kube-proxy");
  const line = parseUnitCommand(args);
  assert.equal(line.command, "run");
  assert.equal(line.configFile, "/var/lib/kube-proxy/config.conf");
  assert.equal(line.config.hostnameOverride, "node-1");
});

Deno.test("deno-kube-proxy.service appends KUBE_PROXY_ARGS from its optional environment file", () => {
  // "-": a missing file is no error.
  assert.deepEqual(directive(unit, "Service", "EnvironmentFile"), [
    "-/etc/default/deno-kube-proxy",
  ]);
  const env = { KUBE_PROXY_ARGS: "--manifests=/etc/deno-kube-proxy/cluster.yaml  -v=2" };
  const [, ...args] = execArgs(directive(unit, "Service", "ExecStart")[0]!, env, "node-1");
  assert.deepEqual(args.slice(-2), ["--manifests=/etc/deno-kube-proxy/cluster.yaml", "-v=2"]);
  const line = parseUnitCommand(args);
  // With --config, our additions and the logging flags still come from the command line.
  assert.equal(line.config.manifests, "/etc/deno-kube-proxy/cluster.yaml");
  assert.equal(line.config.logging.verbosity, 2);
});

Deno.test("deno-kube-proxy.service restarts the proxy after it exits on a config change", () => {
  assert.deepEqual(directive(unit, "Service", "Restart"), ["always"]);
  assert.deepEqual(directive(unit, "Unit", "StartLimitIntervalSec"), ["0"]);
  assert.deepEqual(directive(unit, "Service", "KillMode"), []);
  assert.deepEqual(directive(unit, "Install", "WantedBy"), ["multi-user.target"]);
});

Deno.test("deno-kube-proxy-cleanup.service runs --cleanup once, never beside the proxy", () => {
  assert.deepEqual(directive(cleanup, "Service", "Type"), ["oneshot"]);
  assert.deepEqual(directive(cleanup, "Unit", "Conflicts"), ["deno-kube-proxy.service"]);
  assert.deepEqual(directive(cleanup, "Unit", "After"), ["deno-kube-proxy.service"]);
  // Run by hand only: no [Install] to enable it at boot.
  assert.equal(cleanup.has("Install"), false);
  const execStart = directive(cleanup, "Service", "ExecStart");
  assert.equal(execStart.length, 1);
  const [binary, ...args] = execArgs(execStart[0]!, {}, "node-1");
  assert.equal(binary, "/usr/local/bin/deno-kube-proxy");
  assert.equal(parseUnitCommand(args).command, "cleanup");
});
