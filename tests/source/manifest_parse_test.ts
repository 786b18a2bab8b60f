import assert from "node:assert/strict";
import {
  isManifestFileName,
  manifestObjectKey,
  parseManifestText,
} from "../../lib/source/_manifest_parse.ts";

const FIXTURE = new URL("./fixtures/kubectl_list.yaml", import.meta.url);

Deno.test("parseManifestText() reads every object of kubectl's List output", async () => {
  const parsed = parseManifestText(await Deno.readTextFile(FIXTURE), "kubectl_list.yaml");
  assert.deepEqual(parsed.errors, []);
  assert.deepEqual(parsed.skipped, []);
  assert.deepEqual(parsed.objects.map((o) => o.key), [
    "Service/default/web",
    "Service/default/db",
    "EndpointSlice/default/web-x7k2p",
    "Node/node-a",
    "Node/node-b",
  ]);
});

Deno.test("parseManifestText() reads one object per YAML document and skips empty documents", () => {
  const text = [
    "---",
    "apiVersion: v1\nkind: Service\nmetadata: {name: a, namespace: ns}\nspec: {clusterIP: 172.30.0.1}",
    "---",
    "---",
    "apiVersion: v1\nkind: Node\nmetadata: {name: node-a}",
    "",
  ].join("\n");
  const parsed = parseManifestText(text, "m.yaml");
  assert.deepEqual(parsed.errors, []);
  assert.deepEqual(parsed.objects.map((o) => [o.kind, o.key]), [
    ["Service", "Service/ns/a"],
    ["Node", "Node/node-a"],
  ]);
  const svc = parsed.objects[0];
  assert.equal(svc?.kind, "Service");
  assert.equal(svc?.kind === "Service" ? svc.object.spec?.clusterIP : undefined, "172.30.0.1");
});

Deno.test("parseManifestText() reads JSON, including JSON in a .yaml file", () => {
  const json = JSON.stringify({
    apiVersion: "v1",
    kind: "List",
    items: [{ apiVersion: "v1", kind: "Node", metadata: { name: "node-a" } }],
  });
  for (const name of ["m.json", "m.yaml"]) {
    const parsed = parseManifestText(json, name);
    assert.deepEqual(parsed.errors, [], name);
    assert.deepEqual(parsed.objects.map((o) => o.key), ["Node/node-a"], name);
  }
});

Deno.test("parseManifestText() infers kind and apiVersion of typed list items", () => {
  const text = [
    "apiVersion: discovery.k8s.io/v1",
    "kind: EndpointSliceList",
    "items:",
    "- metadata: {name: s1, namespace: ns}",
    "  addressType: IPv4",
    "---",
    "apiVersion: v1",
    "kind: ServiceList",
    "items:",
    "- metadata: {name: svc, namespace: ns}",
    "---",
    "apiVersion: v1",
    "kind: NodeList",
    "items:",
    "- metadata: {name: node-a}",
  ].join("\n");
  const parsed = parseManifestText(text, "lists.yaml");
  assert.deepEqual(parsed.errors, []);
  assert.deepEqual(
    parsed.objects.map((o) => [o.key, o.object.kind, o.object.apiVersion]),
    [
      ["EndpointSlice/ns/s1", "EndpointSlice", "discovery.k8s.io/v1"],
      ["Service/ns/svc", "Service", "v1"],
      ["Node/node-a", "Node", "v1"],
    ],
  );
});

Deno.test("parseManifestText() ignores other kinds and other API groups", () => {
  const text = [
    "apiVersion: v1\nkind: Pod\nmetadata: {name: p, namespace: ns}",
    "---",
    "apiVersion: serving.knative.dev/v1\nkind: Service\nmetadata: {name: k, namespace: ns}",
    "---",
    "apiVersion: v1\nkind: Service\nmetadata: {name: s, namespace: ns}",
  ].join("\n");
  const parsed = parseManifestText(text, "m.yaml");
  assert.deepEqual(parsed.errors, []);
  assert.deepEqual(parsed.objects.map((o) => o.key), ["Service/ns/s"]);
  assert.equal(parsed.ignored.length, 2);
  assert.match(parsed.ignored[0] ?? "", /"Pod"/);
  assert.match(parsed.ignored[1] ?? "", /serving\.knative\.dev/);
});

Deno.test("parseManifestText() skips objects without a name or namespace, naming the index", () => {
  const text = [
    "apiVersion: v1",
    "kind: List",
    "items:",
    "- {apiVersion: v1, kind: Service, metadata: {namespace: ns}}",
    "- {apiVersion: v1, kind: Service, metadata: {name: no-ns}}",
    "- {apiVersion: v1, kind: Service, metadata: {name: bad-labels, namespace: ns, labels: [x]}}",
    "- {apiVersion: v1, kind: Node}",
    "- {apiVersion: v1, kind: Node, metadata: {name: node-a}}",
  ].join("\n");
  const parsed = parseManifestText(text, "m.yaml");
  assert.deepEqual(parsed.errors, []);
  assert.deepEqual(parsed.objects.map((o) => o.key), ["Node/node-a"]);
  assert.equal(parsed.skipped.length, 4);
  assert.match(parsed.skipped[0] ?? "", /^Item 0\.items\[0\] \(Service\) has metadata\.name null/);
  assert.match(parsed.skipped[1] ?? "", /"no-ns" has metadata\.namespace null/);
  assert.match(
    parsed.skipped[2] ?? "",
    /"bad-labels" has metadata\.labels \["x"\]: expected a map/,
  );
  assert.match(parsed.skipped[3] ?? "", /^Item 0\.items\[3\] \(Node\) has no metadata/);
});

Deno.test("parseManifestText() rejects the whole file on a syntax error or a non-object item", () => {
  const good = "apiVersion: v1\nkind: Node\nmetadata: {name: node-a}\n";
  const cases: Array<[string, string, RegExp]> = [
    [good + "---\nkind: [Service\n", "m.yaml", /^Invalid YAML in document 1: /],
    ['{"kind": "List", "items": [', "m.json", /^Invalid JSON: /],
    [good + "---\njust a string\n", "m.yaml", /^Item 1 is "just a string": expected an object$/],
    [
      good + "---\nkind: List\nitems: [1]\n",
      "m.yaml",
      /^Item 1\.items\[0\] is 1: expected an object$/,
    ],
    [
      good + "---\nkind: List\nitems: {a: 1}\n",
      "m.yaml",
      /items are not a list: expected an array/,
    ],
  ];
  for (const [text, name, want] of cases) {
    const parsed = parseManifestText(text, name);
    assert.equal(parsed.errors.length, 1, text);
    assert.match(parsed.errors[0] ?? "", want);
    assert.deepEqual(parsed.objects, [], "a rejected file contributes no objects");
  }
});

Deno.test("parseManifestText() accepts an empty file", () => {
  assert.deepEqual(parseManifestText("", "empty.yaml"), {
    objects: [],
    errors: [],
    skipped: [],
    ignored: [],
  });
});

Deno.test("manifestObjectKey() keeps namespaces apart and nodes cluster-scoped", () => {
  assert.equal(manifestObjectKey("Service", "a", "x"), "Service/a/x");
  assert.notEqual(manifestObjectKey("Service", "a", "x"), manifestObjectKey("Service", "b", "x"));
  assert.notEqual(
    manifestObjectKey("Service", "a", "x"),
    manifestObjectKey("EndpointSlice", "a", "x"),
  );
  assert.equal(manifestObjectKey("Node", undefined, "n"), "Node/n");
});

Deno.test("isManifestFileName() takes YAML and JSON files but not dotfiles or editor files", () => {
  for (const name of ["a.yaml", "b.yml", "c.json", "D.YAML"]) {
    assert.ok(isManifestFileName(name), name);
  }
  for (
    const name of [".a.yaml", ".#a.yaml", "a.yaml~", "a.yaml.swp", ".a.yaml.swp", "a.txt", "a"]
  ) {
    assert.ok(!isManifestFileName(name), name);
  }
});

Deno.test("parseManifestText() reads cluster-scoped ServiceCIDRs and ignores other versions", () => {
  const text = [
    "apiVersion: networking.k8s.io/v1",
    "kind: ServiceCIDR",
    "metadata: {name: kubernetes}",
    "spec: {cidrs: [172.30.0.0/16]}",
    "---",
    "apiVersion: networking.k8s.io/v1beta1",
    "kind: ServiceCIDR",
    "metadata: {name: old}",
    "---",
    "apiVersion: networking.k8s.io/v1",
    "kind: ServiceCIDRList",
    "items: [{metadata: {name: extra}, spec: {cidrs: [fd00::/112]}}]",
  ].join("\n");
  const parsed = parseManifestText(text, "cidrs.yaml");
  assert.deepEqual(parsed.errors, []);
  assert.deepEqual(parsed.objects.map((o) => `${o.kind} ${o.key}`), [
    "ServiceCIDR ServiceCIDR/kubernetes",
    "ServiceCIDR ServiceCIDR/extra",
  ]);
  assert.equal(parsed.ignored.length, 1);
  assert.match(parsed.ignored[0]!, /networking.k8s.io\/v1beta1/);
});
