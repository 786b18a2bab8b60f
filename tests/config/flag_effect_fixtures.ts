/**
 * What the flag-effect tests (flag_effects_test.ts) share: the command line as main.ts parses
 * it, refusals, conntrack knobs, `render` of a state, and the cluster states they render.
 * IP plan: node 192.168.0.2, pods 10.0.0.0/8, service IPs 172.30.0.0/16.
 */
import assert from "node:assert/strict";
import { renderCommand } from "../../lib/app/commands.ts";
import { MODE_CONFIG_SECTIONS } from "../../lib/backends/mod.ts";
import { ConfigError, parseCommandLine } from "../../lib/config/mod.ts";
import { type CommandLine } from "../../lib/config/types.ts";
import { flagTable } from "../../lib/config/_flag_table.ts";
import { conntrackKnobs } from "../../lib/conntrack/mod.ts";
import { silentLogger } from "../../lib/log/mod.ts";

export const FLAGS = flagTable(MODE_CONFIG_SECTIONS).flags;

export const parse = (args: string[], files: Record<string, string> = {}): CommandLine =>
  parseCommandLine(args, {
    modeSections: MODE_CONFIG_SECTIONS,
    hostname: () => "node1",
    readTextFile: (path) => {
      const text = files[path];
      if (text === undefined) throw new Error(`No such file: ${path}`);
      return text;
    },
  });

export function refused(args: string[], message: RegExp): void {
  assert.throws(() => parse(args), (err: unknown) => {
    assert.ok(err instanceof ConfigError, `expected ConfigError, got ${err}`);
    assert.match(err.message, message);
    return true;
  });
}

export const knobs = (args: string[]) =>
  new Map(conntrackKnobs(parse(args).config.conntrack, 4).map((k) => [k.name, k.value]));

export const NODE = {
  apiVersion: "v1",
  kind: "Node",
  metadata: { name: "node1", labels: { "topology.kubernetes.io/zone": "zone-a" } },
  status: { addresses: [{ type: "InternalIP", address: "192.168.0.2" }] },
};

/** A LoadBalancer service whose source ranges admit only 192.168.7.7, and its endpoint. */
export const LB_STATE = [
  NODE,
  {
    apiVersion: "v1",
    kind: "Service",
    metadata: { name: "lb", namespace: "demo" },
    spec: {
      type: "LoadBalancer",
      clusterIP: "172.30.0.20",
      clusterIPs: ["172.30.0.20"],
      ipFamilies: ["IPv4"],
      loadBalancerSourceRanges: ["192.168.7.7/32"],
      ports: [{ name: "http", port: 80, targetPort: 8080, protocol: "TCP", nodePort: 30090 }],
    },
    status: { loadBalancer: { ingress: [{ ip: "198.51.100.20" }] } },
  },
  slice("lb", "10.0.1.2", { nodeName: "node2" }),
];

/** A service with one endpoint hinted for this node and one for another node of its zone. */
export const HINT_STATE = [
  NODE,
  {
    apiVersion: "v1",
    kind: "Service",
    metadata: { name: "hinted", namespace: "demo" },
    spec: {
      clusterIP: "172.30.0.30",
      clusterIPs: ["172.30.0.30"],
      ipFamilies: ["IPv4"],
      ports: [{ name: "http", port: 80, targetPort: 8080, protocol: "TCP" }],
    },
  },
  slice("hinted", "10.0.1.3", {
    nodeName: "node2",
    hints: { forNodes: [{ name: "node2" }], forZones: [{ name: "zone-a" }] },
  }, {
    addresses: ["10.0.1.4"],
    conditions: { ready: true },
    nodeName: "node1",
    hints: { forNodes: [{ name: "node1" }], forZones: [{ name: "zone-a" }] },
  }),
];

function slice(
  service: string,
  ip: string,
  extra: Record<string, unknown>,
  ...more: unknown[]
) {
  return {
    apiVersion: "discovery.k8s.io/v1",
    kind: "EndpointSlice",
    metadata: {
      name: `${service}-1`,
      namespace: "demo",
      labels: { "kubernetes.io/service-name": service },
    },
    addressType: "IPv4",
    endpoints: [{ addresses: [ip], conditions: { ready: true }, ...extra }, ...more],
    ports: [{ name: "http", port: 8080, protocol: "TCP" }],
  };
}

/** `render` of `state` (written to a temporary manifest file) with `args`. */
export async function render(state: unknown[], args: string[]): Promise<string> {
  const dir = await Deno.makeTempDir();
  try {
    await Deno.writeTextFile(`${dir}/state.json`, JSON.stringify({ kind: "List", items: state }));
    const { config } = parse(["render", `--manifests=${dir}`, ...args]);
    return await renderCommand(config, silentLogger);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}
