import assert from "node:assert/strict";
import {
  type ObjectEvent,
  type ObjectSink,
  type ObjectSource,
  startEarly,
} from "../../lib/source/mod.ts";

function service(name: string): ObjectEvent {
  return { kind: "Service", type: "ADDED", object: { metadata: { name, namespace: "ns" } } };
}

/** A source that delivers `before` at start, then whatever the test pushes, until aborted. */
function scriptedSource() {
  let sink: ObjectSink | undefined;
  const stopped = Promise.withResolvers<void>();
  const factory = (s: ObjectSink): ObjectSource => {
    sink = s;
    return {
      start(signal) {
        s.onEvent(service("a"));
        s.onSynced("Service");
        signal.addEventListener("abort", () => stopped.resolve());
        return stopped.promise;
      },
    };
  };
  return {
    factory,
    push: (e: ObjectEvent) => sink!.onEvent(e),
    listed: () => sink!.onListed?.("Service"),
  };
}

function recorder() {
  const seen: string[] = [];
  const sink: ObjectSink = {
    onEvent: (e) => seen.push(`${e.type} ${e.object.metadata?.name}`),
    onSynced: (k) => seen.push(`synced ${k}`),
    onListed: (k) => seen.push(`listed ${k}`),
  };
  return { seen, sink };
}

Deno.test("startEarly() hands events to the early consumer until attach, replays synced, then forwards", async () => {
  const src = scriptedSource();
  const ac = new AbortController();
  const before = recorder();
  const early = startEarly(src.factory, ac.signal, before.sink.onEvent);
  src.push(service("b"));
  // Events are consumed as they come; the synced signal waits for the sink.
  assert.deepEqual(before.seen, ["ADDED a", "ADDED b"]);
  const rec = recorder();
  const attached = early.attach(rec.sink);
  assert.deepEqual(rec.seen, ["synced Service"]);
  src.push(service("c"));
  assert.deepEqual(before.seen, ["ADDED a", "ADDED b"]);
  assert.deepEqual(rec.seen.at(-1), "ADDED c");
  src.listed(); // a relist once attached reaches the sink
  assert.deepEqual(rec.seen.at(-1), "listed Service");
  const done = attached.start(new AbortController().signal);
  ac.abort();
  await done;
});

Deno.test("startEarly() attaches once; a failed source rejects the attached start()", async () => {
  const early = startEarly(
    () => ({ start: () => Promise.reject(new Error("list refused")) }),
    new AbortController().signal,
    () => {},
  );
  await new Promise((r) => setTimeout(r, 0)); // the failure happens before anyone attached
  const attached = early.attach(recorder().sink);
  await assert.rejects(attached.start(new AbortController().signal), /list refused/);
  assert.throws(() => early.attach(recorder().sink), /only once/);
});
