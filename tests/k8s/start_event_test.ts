import assert from "node:assert/strict";
import { microTime, startingEvent } from "../../lib/k8s/_start_event.ts";

Deno.test("startingEvent() is upstream's Starting event about the Node", () => {
  const now = Date.parse("2025-03-04T05:06:07.089Z");
  assert.deepEqual(startingEvent("node-1", now), {
    apiVersion: "events.k8s.io/v1",
    kind: "Event",
    metadata: { name: `node-1.${(BigInt(now) * 1_000_000n).toString(16)}`, namespace: "default" },
    eventTime: "2025-03-04T05:06:07.089000Z",
    reportingController: "kube-proxy",
    reportingInstance: "kube-proxy-node-1",
    action: "StartKubeProxy",
    reason: "Starting",
    type: "Normal",
    note: "Starting kube-proxy",
    regarding: { apiVersion: "v1", kind: "Node", name: "node-1", uid: "node-1" },
  });
  assert.equal(microTime(0), "1970-01-01T00:00:00.000000Z");
});
