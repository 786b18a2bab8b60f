import assert from "node:assert/strict";
import { proxyResources } from "../../lib/k8s/mod.ts";
import {
  listQuery,
  nodeFieldSelector,
  PROXY_LABEL_SELECTOR,
  watchQuery,
  watchTimeoutSeconds,
} from "../../lib/k8s/resources.ts";

Deno.test("proxyResources() watches Services and EndpointSlices by label, the Node by name and ServiceCIDRs", () => {
  assert.equal(
    PROXY_LABEL_SELECTOR,
    "!service.kubernetes.io/service-proxy-name,!service.kubernetes.io/headless",
  );
  assert.deepEqual(proxyResources("node-1"), [
    { kind: "Service", path: "/api/v1/services", labelSelector: PROXY_LABEL_SELECTOR },
    {
      kind: "EndpointSlice",
      path: "/apis/discovery.k8s.io/v1/endpointslices",
      labelSelector: PROXY_LABEL_SELECTOR,
    },
    { kind: "Node", path: "/api/v1/nodes", fieldSelector: "metadata.name=node-1" },
    { kind: "ServiceCIDR", path: "/apis/networking.k8s.io/v1/servicecidrs", optional: true },
  ]);
  assert.equal(nodeFieldSelector("n"), "metadata.name=n");
});

Deno.test("listQuery() and watchQuery() carry the selectors, paging, bookmarks and timeout", () => {
  const [svc, , node] = proxyResources("node-1");
  assert.deepEqual(listQuery(svc!, { limit: 500, continueToken: "", resourceVersion: "0" }), {
    labelSelector: PROXY_LABEL_SELECTOR,
    limit: "500",
    resourceVersion: "0",
  });
  assert.deepEqual(listQuery(svc!, { limit: 500, continueToken: "", resourceVersion: "" }), {
    labelSelector: PROXY_LABEL_SELECTOR,
    limit: "500",
  });
  // The API server refuses a resourceVersion next to a continue token.
  assert.deepEqual(listQuery(node!, { limit: 0, continueToken: "tok", resourceVersion: "7" }), {
    fieldSelector: "metadata.name=node-1",
    continue: "tok",
  });
  assert.deepEqual(watchQuery(svc!, "42", 377), {
    labelSelector: PROXY_LABEL_SELECTOR,
    watch: "true",
    resourceVersion: "42",
    allowWatchBookmarks: "true",
    timeoutSeconds: "377",
  });
});

Deno.test("watchTimeoutSeconds() spreads timeouts between the minimum and twice it", () => {
  assert.equal(watchTimeoutSeconds(300, () => 0), 300);
  assert.equal(watchTimeoutSeconds(300, () => 0.5), 450);
  assert.equal(watchTimeoutSeconds(300, () => 0.9999), 599);
});
