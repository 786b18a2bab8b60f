import assert from "node:assert/strict";
import { join } from "node:path";
import { createMemoryLogger } from "../../lib/log/logger.ts";
import type { ObjectEvent, ObjectKind } from "../../lib/source/events.ts";
import { createManifestSource, type ManifestSource } from "../../lib/source/manifest_source.ts";
import { waitFor as poll } from "../support/wait.ts";

/** Waits up to 5 s, polling every 10 ms, as these file-watch checks need. */
const waitFor = (what: string, cond: () => boolean) => poll(what, cond, 5000, 10);

// IP plan: service IPs 172.30.0.0/16, pods 10.0.0.0/8, node 192.168.0.2.
const FIXTURE = new URL("./fixtures/kubectl_list.yaml", import.meta.url);

/** A sink that keeps what it was given, tagging each event with a short summary. */
function recordingSink() {
  const events: ObjectEvent[] = [];
  const synced: ObjectKind[] = [];
  return {
    events,
    synced,
    summaries: () => events.map((e) => `${e.type} ${e.kind} ${e.object.metadata?.name ?? "?"}`),
    onEvent: (e: ObjectEvent) => void events.push(e),
    onSynced: (kind: ObjectKind) => void synced.push(kind),
  };
}

function serviceYaml(name: string, clusterIP: string, labels = "{}"): string {
  return `apiVersion: v1
kind: Service
metadata: {name: ${name}, namespace: default, labels: ${labels}}
spec: {clusterIP: ${clusterIP}, ports: [{port: 80, protocol: TCP}]}
`;
}

const NODE_A = "apiVersion: v1\nkind: Node\nmetadata: {name: node-a}\n";

/** Runs `body` against a started source over a fresh temp dir, then stops and cleans up. */
async function withSource(
  opts: { files: Record<string, string>; file?: string },
  body: (ctx: {
    dir: string;
    sink: ReturnType<typeof recordingSink>;
    logger: ReturnType<typeof createMemoryLogger>;
    source: ManifestSource;
    controller: AbortController;
    rescans: () => number;
  }) => Promise<void> | void,
): Promise<void> {
  const dir = await Deno.makeTempDir({ prefix: "manifest_source_test_" });
  const controller = new AbortController();
  const sink = recordingSink();
  const logger = createMemoryLogger();
  try {
    for (const [name, text] of Object.entries(opts.files)) {
      await Deno.writeTextFile(join(dir, name), text);
    }
    const source = createManifestSource({
      path: opts.file === undefined ? dir : join(dir, opts.file),
      sink,
      nodeName: "node-a",
      logger,
      debounceMs: 20,
      retryMs: 50,
    });
    await source.start(controller.signal);
    try {
      const rescans = () => logger.lines.filter((l) => l.includes("Rescanned manifests")).length;
      await body({ dir, sink, logger, source, controller, rescans });
    } finally {
      controller.abort();
      await source.stopped();
    }
  } finally {
    await Deno.remove(dir, { recursive: true }).catch(() => {});
  }
}

Deno.test("createManifestSource() delivers a kubectl List file, filtered, then signals synced", async () => {
  await withSource(
    { files: { "all.yaml": await Deno.readTextFile(FIXTURE) }, file: "all.yaml" },
    ({ sink }) => {
      assert.deepEqual(sink.summaries(), [
        "ADDED EndpointSlice web-x7k2p",
        "ADDED Node node-a",
        "ADDED Service web",
      ]);
      assert.deepEqual(sink.synced, ["Service", "EndpointSlice", "Node", "ServiceCIDR"]);
    },
  );
});

Deno.test("createManifestSource() reads every manifest file of a directory and skips the rest", async () => {
  const files = {
    "a.yaml": serviceYaml("svc-a", "172.30.0.1") + "---\n" + NODE_A,
    "b.json": JSON.stringify({
      apiVersion: "v1",
      kind: "List",
      items: [{
        apiVersion: "v1",
        kind: "Service",
        metadata: { name: "svc-b", namespace: "default" },
      }],
    }),
    "c.yml": "apiVersion: discovery.k8s.io/v1\nkind: EndpointSliceList\nitems:\n" +
      "- metadata: {name: svc-a-1, namespace: default}\n  addressType: IPv4\n",
    ".hidden.yaml": serviceYaml("hidden", "172.30.0.9"),
    "a.yaml~": serviceYaml("backup", "172.30.0.9"),
    ".#a.yaml": serviceYaml("lock", "172.30.0.9"),
    "notes.txt": "not: [a manifest",
  };
  await withSource({ files }, ({ sink }) => {
    assert.deepEqual(sink.summaries(), [
      "ADDED EndpointSlice svc-a-1",
      "ADDED Node node-a",
      "ADDED Service svc-a",
      "ADDED Service svc-b",
    ]);
    assert.deepEqual(sink.synced, ["Service", "EndpointSlice", "Node", "ServiceCIDR"]);
  });
});

Deno.test("createManifestSource() rejects a path that does not exist", async () => {
  const dir = await Deno.makeTempDir({ prefix: "manifest_source_test_" });
  try {
    const source = createManifestSource({
      path: join(dir, "missing.yaml"),
      sink: recordingSink(),
      nodeName: "node-a",
    });
    await assert.rejects(
      source.start(new AbortController().signal),
      /missing\.yaml" does not exist: expected/,
    );
    await source.stopped();
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("createManifestSource() turns an edit in place into MODIFIED and an identical rewrite into nothing", async () => {
  const text = serviceYaml("web", "172.30.0.1");
  await withSource(
    { files: { "m.yaml": text }, file: "m.yaml" },
    async ({ dir, sink, rescans }) => {
      const before = rescans();
      await Deno.writeTextFile(join(dir, "m.yaml"), text);
      await waitFor("a rescan after the identical rewrite", () => rescans() > before);
      assert.deepEqual(sink.summaries(), ["ADDED Service web"]);

      await Deno.writeTextFile(join(dir, "m.yaml"), serviceYaml("web", "172.30.0.2"));
      await waitFor("MODIFIED", () => sink.events.length === 2);
      assert.deepEqual(sink.summaries()[1], "MODIFIED Service web");
      const svc = sink.events[1];
      assert.equal(svc?.kind === "Service" ? svc.object.spec?.clusterIP : undefined, "172.30.0.2");
    },
  );
});

Deno.test("createManifestSource() turns a newly added proxy label into DELETED with the last object", async () => {
  await withSource(
    { files: { "m.yaml": serviceYaml("web", "172.30.0.1") } },
    async ({ dir, sink }) => {
      await Deno.writeTextFile(
        join(dir, "m.yaml"),
        serviceYaml("web", "172.30.0.1", '{"service.kubernetes.io/service-proxy-name": other}'),
      );
      await waitFor("DELETED", () => sink.events.length === 2);
      assert.deepEqual(sink.summaries(), ["ADDED Service web", "DELETED Service web"]);
      assert.deepEqual(sink.events[1]?.object.metadata?.labels, {});
    },
  );
});

Deno.test("createManifestSource() delivers only this node's Node, also on later changes", async () => {
  const nodeB = "apiVersion: v1\nkind: Node\nmetadata: {name: node-b}\n";
  await withSource({ files: { "n.yaml": nodeB } }, async ({ dir, sink }) => {
    assert.deepEqual(sink.summaries(), []);
    await Deno.writeTextFile(join(dir, "n.yaml"), nodeB + "---\n" + NODE_A);
    await waitFor("node-a", () => sink.events.length === 1);
    assert.deepEqual(sink.summaries(), ["ADDED Node node-a"]);
  });
});

for (const mode of ["file", "directory"] as const) {
  Deno.test(`createManifestSource() turns an atomic rename over a watched file into MODIFIED (${mode} mode)`, async () => {
    const opts = { files: { "m.yaml": serviceYaml("web", "172.30.0.1") } };
    await withSource(
      mode === "file" ? { ...opts, file: "m.yaml" } : opts,
      async ({ dir, sink }) => {
        for (const [i, ip] of ["172.30.0.2", "172.30.0.3"].entries()) {
          const tmp = join(dir, `.m.yaml.tmp${i}`);
          await Deno.writeTextFile(tmp, serviceYaml("web", ip));
          await Deno.rename(tmp, join(dir, "m.yaml"));
          await waitFor(`MODIFIED to ${ip}`, () => sink.events.length === i + 2);
          const last = sink.events.at(-1);
          assert.equal(last?.type, "MODIFIED");
          assert.equal(last?.kind === "Service" ? last.object.spec?.clusterIP : undefined, ip);
        }
      },
    );
  });
}

Deno.test("createManifestSource() turns files added to and removed from a directory into ADDED and DELETED", async () => {
  await withSource(
    { files: { "a.yaml": serviceYaml("a", "172.30.0.1") } },
    async ({ dir, sink }) => {
      await Deno.writeTextFile(join(dir, "b.yaml"), serviceYaml("b", "172.30.0.2"));
      await waitFor("ADDED b", () => sink.events.length === 2);
      await Deno.remove(join(dir, "a.yaml"));
      await waitFor("DELETED a", () => sink.events.length === 3);
      assert.deepEqual(sink.summaries(), [
        "ADDED Service a",
        "ADDED Service b",
        "DELETED Service a",
      ]);
      const deleted = sink.events[2];
      assert.equal(
        deleted?.kind === "Service" ? deleted.object.spec?.clusterIP : undefined,
        "172.30.0.1",
      );
    },
  );
});

Deno.test("createManifestSource() keeps a broken file's last good objects, logs, and recovers once fixed", async () => {
  await withSource(
    {
      files: { "a.yaml": serviceYaml("a", "172.30.0.1"), "b.yaml": serviceYaml("b", "172.30.0.2") },
    },
    async ({ dir, sink, logger }) => {
      await Deno.writeTextFile(join(dir, "a.yaml"), "kind: [Service\n");
      await waitFor(
        "the parse error",
        () => logger.lines.some((l) => l.includes("Cannot parse manifest")),
      );
      const line = logger.lines.find((l) => l.includes("Cannot parse manifest")) ?? "";
      assert.match(line, /^E/);
      assert.ok(line.includes(join(dir, "a.yaml")), line);
      assert.match(line, /Invalid YAML in document 0/);

      await Deno.writeTextFile(join(dir, "b.yaml"), serviceYaml("b", "172.30.0.3"));
      await waitFor("MODIFIED b", () => sink.events.length === 3);
      assert.deepEqual(sink.summaries().slice(2), ["MODIFIED Service b"], "a is not deleted");

      await Deno.writeTextFile(join(dir, "a.yaml"), serviceYaml("a", "172.30.0.4"));
      await waitFor("MODIFIED a", () => sink.events.length === 4);
      assert.deepEqual(sink.summaries()[3], "MODIFIED Service a");
    },
  );
});

Deno.test("createManifestSource() lets the last file win for an object defined twice, with a warning", async () => {
  const files = {
    "a.yaml": serviceYaml("web", "172.30.0.1"),
    "b.yaml": serviceYaml("web", "172.30.0.2"),
  };
  await withSource({ files }, ({ sink, logger }) => {
    assert.deepEqual(sink.summaries(), ["ADDED Service web"]);
    const svc = sink.events[0];
    assert.equal(svc?.kind === "Service" ? svc.object.spec?.clusterIP : undefined, "172.30.0.2");
    assert.ok(logger.lines.some((l) => l.startsWith("W") && l.includes("Service/default/web")));
  });
});

Deno.test("createManifestSource() keeps the objects of a vanished file until it comes back", async () => {
  await withSource(
    { files: { "m.yaml": serviceYaml("web", "172.30.0.1") }, file: "m.yaml" },
    async ({ dir, sink, logger }) => {
      await Deno.remove(join(dir, "m.yaml"));
      await waitFor(
        "the warning",
        () => logger.lines.some((l) => l.includes("Manifest file disappeared")),
      );
      await Deno.writeTextFile(join(dir, "m.yaml"), serviceYaml("web", "172.30.0.5"));
      await waitFor("MODIFIED", () => sink.events.length === 2);
      assert.deepEqual(sink.summaries(), ["ADDED Service web", "MODIFIED Service web"]);
    },
  );
});

Deno.test("createManifestSource() keeps the objects of a vanished directory and resumes when it returns", async () => {
  const parent = await Deno.makeTempDir({ prefix: "manifest_source_test_" });
  const dir = join(parent, "manifests");
  const controller = new AbortController();
  const sink = recordingSink();
  const logger = createMemoryLogger();
  const source = createManifestSource({
    path: dir,
    sink,
    nodeName: "node-a",
    logger,
    debounceMs: 20,
    retryMs: 50,
  });
  try {
    await Deno.mkdir(dir);
    await Deno.writeTextFile(join(dir, "m.yaml"), serviceYaml("web", "172.30.0.1"));
    await source.start(controller.signal);
    await Deno.remove(dir, { recursive: true });
    await waitFor(
      "the warning",
      () => logger.lines.some((l) => l.includes("directory disappeared")),
    );
    await Deno.mkdir(dir);
    await Deno.writeTextFile(join(dir, "m.yaml"), serviceYaml("web", "172.30.0.6"));
    await waitFor("MODIFIED", () => sink.events.length === 2);
    await Deno.writeTextFile(join(dir, "n.yaml"), serviceYaml("new", "172.30.0.7"));
    await waitFor("ADDED from the new watch", () => sink.events.length === 3);
    assert.deepEqual(sink.summaries(), [
      "ADDED Service web",
      "MODIFIED Service web",
      "ADDED Service new",
    ]);
  } finally {
    controller.abort();
    await source.stopped();
    await Deno.remove(parent, { recursive: true });
  }
});

Deno.test("createManifestSource() delivers nothing after the signal aborts", async () => {
  let dir = "";
  let sinkRef: ReturnType<typeof recordingSink> | undefined;
  await withSource({ files: { "m.yaml": serviceYaml("web", "172.30.0.1") } }, async (ctx) => {
    dir = ctx.dir;
    sinkRef = ctx.sink;
    ctx.controller.abort();
    await ctx.source.stopped();
    await Deno.writeTextFile(join(dir, "m.yaml"), serviceYaml("web", "172.30.0.2"));
    await Deno.writeTextFile(join(dir, "n.yaml"), serviceYaml("new", "172.30.0.3"));
    // A negative check needs a window: several debounce periods in which nothing may arrive.
    await new Promise((r) => setTimeout(r, 200));
  });
  assert.deepEqual(sinkRef?.summaries(), ["ADDED Service web"]);
});
