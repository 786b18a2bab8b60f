/** `trace` arguments: the packet's form, defaults, and errors naming the argument. */
import assert from "node:assert/strict";
import { ConfigError, parseCommandLine } from "../../lib/config/mod.ts";
import { MODE_CONFIG_SECTIONS } from "../../lib/backends/mod.ts";

function parse(args: string[]) {
  return parseCommandLine(args, {
    modeSections: MODE_CONFIG_SECTIONS,
    hostname: () => "node1",
    readTextFile: () => "",
  });
}

function rejects(args: string[], message: RegExp) {
  assert.throws(
    () => parse(args),
    (e: unknown) => e instanceof ConfigError && message.test(e.message),
  );
}

Deno.test("parseCommandLine() reads trace's packet with tcp, an inferred source and text as defaults", () => {
  const cl = parse(["trace", "--from", "10.0.0.5", "--to", "172.30.0.10:80"]);
  assert.equal(cl.command, "trace");
  assert.deepEqual(cl.trace, {
    family: "IPv4",
    from: "10.0.0.5",
    to: "172.30.0.10",
    port: 80,
    protocol: "tcp",
    source: "auto",
    output: "text",
    rendered: false,
  });
});

Deno.test("parseCommandLine() reads an IPv6 trace with protocol, source, json and --rendered", () => {
  const cl = parse([
    "trace",
    "--from=fd00:99::2",
    "--to=[fd00:30::0a]:53/UDP",
    "--source=external",
    "--output=json",
    "--rendered",
  ]);
  assert.deepEqual(cl.trace, {
    family: "IPv6",
    from: "fd00:99::2",
    to: "fd00:30::a",
    port: 53,
    protocol: "udp",
    source: "external",
    output: "json",
    rendered: true,
  });
});

Deno.test("parseCommandLine() names the trace argument that is missing or malformed", () => {
  rejects(["trace", "--to", "172.30.0.10:80"], /^Missing --from: expected/);
  rejects(["trace", "--from", "10.0.0.5"], /^Missing --to: expected IP:PORT/);
  rejects(
    ["trace", "--from", "10.0.0.500", "--to", "172.30.0.10:80"],
    /^Invalid --from "10.0.0.500": expected an IPv4 or IPv6 address$/,
  );
  rejects(
    ["trace", "--from", "10.0.0.5", "--to", "web.demo:80"],
    /^Invalid --to "web.demo:80": expected IP:PORT/,
  );
  rejects(
    ["trace", "--from", "10.0.0.5", "--to", "172.30.0.10"],
    /^Invalid --to "172.30.0.10": expected IP:PORT/,
  );
  rejects(
    ["trace", "--from", "10.0.0.5", "--to", "172.30.0.10:0"],
    /^Invalid --to "172.30.0.10:0": expected a port from 1 to 65535$/,
  );
  rejects(
    ["trace", "--from", "10.0.0.5", "--to", "172.30.0.10:80/icmp"],
    /^Invalid --to "172.30.0.10:80\/icmp": expected the protocol tcp, udp or sctp$/,
  );
  rejects(
    ["trace", "--from", "fd00::5", "--to", "fd00::10:80"],
    /^Invalid --to "fd00::10:80": expected IP:PORT/,
  );
  rejects(
    ["trace", "--from", "fd00::5", "--to", "172.30.0.10:80"],
    /^Invalid --to "172.30.0.10:80": expected an IPv6 address, as --from "fd00::5" is$/,
  );
  rejects(
    ["trace", "--from", "10.0.0.5", "--to", "172.30.0.10:80", "--source", "host"],
    /--source/,
  );
  rejects(["--from", "10.0.0.5"], /^Invalid --from: expected only with the "trace" subcommand$/);
});
