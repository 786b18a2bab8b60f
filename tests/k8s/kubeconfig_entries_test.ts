import assert from "node:assert/strict";
import { parse } from "yaml";
import { newClusters, newContexts, newUsers } from "@kubernetes/client-node/dist/config_types.js";
import { kubeConfigEntries } from "../../lib/k8s/_kubeconfig_entries.ts";

/** Entries with null and undefined fields dropped (client-node spells absent both ways). */
function dropEmpty<T extends object>(entries: readonly T[]): T[] {
  return entries.map((e) =>
    Object.fromEntries(Object.entries(e).filter(([, v]) => v !== null && v !== undefined)) as T
  );
}

const DOCS = [
  `clusters:
- name: c1
  cluster: {server: "https://10.0.0.1:6443/", certificate-authority: /etc/ca.crt}
- name: c2
  cluster:
    server: https://[fd00::1]:443
    certificate-authority-data: Zm9v
    insecure-skip-tls-verify: true
    tls-server-name: api
    proxy-url: http://proxy:3128
contexts:
- name: a
  context: {cluster: c1, user: u1, namespace: kube-system}
- name: b
  context: {cluster: c2}
users:
- name: u1
  user: {token: abc, as: admin, username: me, password: pw}
- name: u2
  user:
    client-certificate: /etc/u.crt
    client-key: /etc/u.key
    client-certificate-data: Y2VydA==
    client-key-data: a2V5
- name: u3
  user:
    exec: {apiVersion: client.authentication.k8s.io/v1, command: /bin/plugin, args: [x]}
- name: u4
  user:
    auth-provider: {name: oidc, config: {id-token: t}}
- name: u5
current-context: a
`,
  `clusters: []
users: nope
`,
  `{}`,
];

Deno.test("kubeConfigEntries() reads entries as client-node's config_types.js does", () => {
  for (const text of DOCS) {
    const doc = parse(text) as Record<string, unknown>;
    const ours = kubeConfigEntries(doc, "/etc/kubernetes");
    assert.deepEqual(dropEmpty(ours.clusters), dropEmpty(newClusters(doc.clusters)));
    assert.deepEqual(dropEmpty(ours.contexts), dropEmpty(newContexts(doc.contexts)));
    assert.deepEqual(dropEmpty(ours.users), dropEmpty(newUsers(doc.users)));
  }
  assert.equal(kubeConfigEntries(parse(DOCS[0]!), "/").currentContext, "a");
  assert.equal(kubeConfigEntries(null, "/").currentContext, "");
});

Deno.test("kubeConfigEntries() throws client-node's message for an incomplete entry", () => {
  const broken = [
    "clusters: [{cluster: {server: https://x}}]",
    "clusters: [{name: c}]",
    "clusters: [{name: c, cluster: {}}]",
    "clusters: [{name: c, cluster: {server: https://x}}, {name: d, cluster: {}}]",
    "contexts: [{context: {cluster: c}}]",
    "contexts: [{name: x}]",
    "contexts: [{name: x, context: {user: u}}]",
    "users: [{user: {token: t}}]",
  ];
  for (const text of broken) {
    const doc = parse(text) as Record<string, unknown>;
    let expected = "";
    try {
      newClusters(doc.clusters);
      newContexts(doc.contexts);
      newUsers(doc.users);
    } catch (err) {
      expected = (err as Error).message;
    }
    assert.notEqual(expected, "", text);
    assert.throws(() => kubeConfigEntries(doc, "/"), new Error(expected), text);
  }
  assert.throws(() => kubeConfigEntries("just text", "/"), /Expected a YAML mapping/);
});

Deno.test("kubeConfigEntries() resolves relative files next to the kubeconfig", () => {
  const entries = kubeConfigEntries(
    parse(`clusters:
- name: c
  cluster: {server: https://x, certificate-authority: pki/ca.crt}
users:
- name: u
  user: {client-certificate: u.crt, client-key: /abs/u.key}
`),
    "/etc/kubernetes",
  );
  assert.equal(entries.clusters[0]!.caFile, "/etc/kubernetes/pki/ca.crt");
  assert.equal(entries.users[0]!.certFile, "/etc/kubernetes/u.crt");
  assert.equal(entries.users[0]!.keyFile, "/abs/u.key");
});

Deno.test("kubeConfigEntries() turns token files into a re-read tokenFile provider", () => {
  const users = kubeConfigEntries(
    parse(`users:
- name: a
  user: {tokenFile: sa/token}
- name: b
  user: {token-file: /abs/token}
- name: c
  user: {token: t, tokenFile: x}
- name: d
  user: {client-certificate: c.crt}
`),
    "/etc/kubernetes",
  ).users;
  const provider = (name: string) => users.find((u) => u.name === name)?.authProvider;
  assert.deepEqual(provider("a"), {
    name: "tokenFile",
    config: { tokenFile: "/etc/kubernetes/sa/token" },
  });
  assert.deepEqual(provider("b"), { name: "tokenFile", config: { tokenFile: "/abs/token" } });
  assert.equal(provider("c"), undefined); // an inline token wins, as in client-go
  assert.equal(users.find((u) => u.name === "c")?.token, "t");
  assert.equal(provider("d"), undefined);
});
