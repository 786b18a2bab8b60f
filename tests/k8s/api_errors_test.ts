import assert from "node:assert/strict";
import {
  ApiStatusError,
  needsRelist,
  parseRetryAfter,
  parseStatus,
  statusError,
  WatchExpiredError,
} from "../../lib/k8s/_api_errors.ts";

Deno.test("parseRetryAfter() reads delay-seconds and HTTP dates", () => {
  const now = Date.parse("2025-01-01T00:00:00Z");
  assert.equal(parseRetryAfter("3", now), 3000);
  assert.equal(parseRetryAfter(" 0 ", now), 0);
  assert.equal(parseRetryAfter("Wed, 01 Jan 2025 00:00:05 GMT", now), 5000);
  assert.equal(parseRetryAfter("soon", now), undefined);
  assert.equal(parseRetryAfter(undefined, now), undefined);
});

Deno.test("statusError() classifies 410 as WatchExpiredError and keeps the server's words", () => {
  const err = statusError("Cannot watch Services", 200, {
    code: 410,
    reason: "Expired",
    message: "too old resource version: 5 (90)",
  });
  assert.ok(err instanceof WatchExpiredError);
  assert.ok(needsRelist(err));
  assert.match(err.message, /^Cannot watch Services: .*410 Gone.*too old resource version/);
});

Deno.test("statusError() explains 401 and carries Retry-After for 429", () => {
  const denied = statusError(
    "Cannot list Services",
    401,
    parseStatus('{"message":"Unauthorized"}'),
  );
  assert.ok(!(denied instanceof WatchExpiredError));
  assert.equal(denied.status, 401);
  assert.match(denied.message, /rejected our credentials.*token or client certificate/);
  const busy = statusError("Cannot list Services", 429, undefined, 2000);
  assert.equal(busy.retryAfterMs, 2000);
  const hinted = statusError("x", 429, { details: { retryAfterSeconds: 4 } });
  assert.equal(hinted.retryAfterMs, 4000);
});

Deno.test("needsRelist() is true for a too-large resourceVersion, false for other errors", () => {
  const tooLarge = statusError("Cannot watch Services", 504, {
    code: 504,
    reason: "Timeout",
    details: {
      causes: [{ reason: "ResourceVersionTooLarge", message: "Too large resource version" }],
    },
  });
  assert.ok(needsRelist(tooLarge));
  assert.ok(!needsRelist(new ApiStatusError("x", 500)));
  assert.ok(!needsRelist(new Error("x")));
  assert.equal(parseStatus("not json"), undefined);
});
