/**
 * The OCI archive `deno task image` writes is accepted by the engines operators load it with:
 * `podman load` (Debian's podman, its own storage in a temporary folder) and `ctr images import`
 * (Debian's containerd, started for the test on its own socket and folders), each naming the
 * image as the DaemonSets do. Needs root; a missing engine fails the test.
 */
import assert from "node:assert/strict";
import { buildImage, imageReference } from "../../scripts/image/mod.ts";
import { requireCommands } from "../../scripts/netns/mod.ts";
import { waitFor } from "../support/wait.ts";

const REPO_ROOT = decodeURIComponent(new URL("../../", import.meta.url).pathname);
const VERSION = JSON.parse(Deno.readTextFileSync(`${REPO_ROOT}deno.json`)).version as string;
const decoder = new TextDecoder();

async function run(cmd: string, args: string[]) {
  const out = await new Deno.Command(cmd, { args, stdin: "null" }).output();
  return {
    code: out.code,
    stdout: decoder.decode(out.stdout),
    stderr: decoder.decode(out.stderr),
  };
}

async function archive(): Promise<string> {
  return (await buildImage({ log: (line) => console.log(line) })).archive;
}

Deno.test("image: podman load takes the OCI archive as localhost/deno-kube-proxy", async () => {
  requireCommands(["podman"]);
  const dir = await Deno.makeTempDir({ prefix: "deno-kube-proxy-podman-" });
  const podman = ["--storage-driver", "vfs", "--root", `${dir}/root`, "--runroot", `${dir}/run`];
  try {
    const loaded = await run("podman", [...podman, "load", "-i", await archive()]);
    assert.equal(loaded.code, 0, loaded.stderr);
    assert.match(loaded.stdout + loaded.stderr, /Loaded image: localhost\/deno-kube-proxy:/);
    const listed = await run("podman", [
      ...podman,
      "images",
      "--format",
      "{{.Repository}}:{{.Tag}}",
    ]);
    assert.equal(listed.code, 0, listed.stderr);
    assert.deepEqual(listed.stdout.trim().split("\n"), [imageReference(VERSION)]);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("image: ctr images import takes the OCI archive as localhost/deno-kube-proxy", async () => {
  requireCommands(["containerd", "ctr"]);
  const dir = await Deno.makeTempDir({ prefix: "deno-kube-proxy-containerd-" });
  const socket = `${dir}/containerd.sock`;
  await Deno.writeTextFile(
    `${dir}/config.toml`,
    `version = 2\nroot = "${dir}/root"\nstate = "${dir}/state"\n[grpc]\n  address = "${socket}"\n`,
  );
  const containerd = new Deno.Command("containerd", {
    args: ["--config", `${dir}/config.toml`],
    stdin: "null",
    stdout: "null",
    stderr: "piped",
  }).spawn();
  const log = containerd.stderr.pipeThrough(new TextDecoderStream());
  let said = "";
  const reading = (async () => {
    for await (const chunk of log) said += chunk;
  })();
  try {
    const ctr = ["--address", socket, "-n", "k8s.io"];
    await waitFor(
      "containerd to serve",
      async () => {
        return (await run("ctr", [...ctr, "version"])).code === 0;
      },
      30_000,
      200,
    ).catch((err) => {
      throw new Error(`${err.message}\ncontainerd said:\n${said}`);
    });
    const imported = await run("ctr", [...ctr, "images", "import", await archive()]);
    assert.equal(imported.code, 0, imported.stderr);
    const listed = await run("ctr", [...ctr, "images", "ls", "-q"]);
    assert.equal(listed.code, 0, listed.stderr);
    assert.ok(
      listed.stdout.split("\n").includes(imageReference(VERSION)),
      `ctr images ls -q:\n${listed.stdout}`,
    );
  } finally {
    containerd.kill("SIGTERM");
    await containerd.status;
    await reading;
    await Deno.remove(dir, { recursive: true });
  }
});
