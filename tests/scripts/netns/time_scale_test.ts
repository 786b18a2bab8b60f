import assert from "node:assert/strict";
import { e2eTimeScale, scaledMs } from "../../../scripts/netns/mod.ts";

function withScale(value: string | undefined, body: () => void) {
  const before = Deno.env.get("E2E_TIME_SCALE");
  if (value === undefined) Deno.env.delete("E2E_TIME_SCALE");
  else Deno.env.set("E2E_TIME_SCALE", value);
  try {
    body();
  } finally {
    if (before === undefined) Deno.env.delete("E2E_TIME_SCALE");
    else Deno.env.set("E2E_TIME_SCALE", before);
  }
}

Deno.test("scaledMs() multiplies by E2E_TIME_SCALE, and ignores a value below 1 or not a number", () => {
  withScale(undefined, () => assert.equal(scaledMs(10_000), 10_000));
  withScale("5", () => assert.equal(scaledMs(10_000), 50_000));
  withScale("0.5", () => assert.equal(e2eTimeScale(), 1));
  withScale("fast", () => assert.equal(e2eTimeScale(), 1));
});
