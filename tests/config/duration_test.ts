import assert from "node:assert/strict";
import { parseDuration } from "../../lib/config/mod.ts";
import { formatDuration } from "../../lib/config/duration.ts";

Deno.test("parseDuration() reads Go durations into milliseconds", () => {
  const cases: Array<[string, number]> = [
    ["30s", 30_000],
    ["1m30s", 90_000],
    ["500ms", 500],
    ["1h", 3_600_000],
    ["24h0m0s", 86_400_000],
    ["2h22m", 8_520_000],
    ["0s", 0],
    ["0", 0],
    ["1.5s", 1500],
    [".5s", 500],
    ["5.s", 5000],
    ["1us", 0.001],
    ["1\u00b5s", 0.001],
    ["1\u03bcs", 0.001],
    ["1000000ns", 1],
    ["+2m", 120_000],
    ["-1s", -1000],
    ["1h1m1s1ms", 3_661_001],
  ];
  for (const [text, ms] of cases) assert.equal(parseDuration(text), ms, text);
});

Deno.test("parseDuration() rejects text that Go's time.ParseDuration rejects", () => {
  for (const text of ["", "s", "1", "30", "1x", "abc", "1s2", ".", "1.s.", "- 1s", "1 s", "-"]) {
    assert.throws(() => parseDuration(text), new RegExp(`Invalid duration "${text}"`), text);
  }
});

Deno.test("parseDuration() names an unknown unit", () => {
  assert.throws(() => parseDuration("5d"), /unknown unit "d"/);
});

Deno.test("parseDuration() rejects durations beyond Go's int64 nanoseconds", () => {
  assert.equal(parseDuration("2562047h"), 2562047 * 3_600_000);
  assert.throws(() => parseDuration("2562048h"), /Invalid duration/);
});

Deno.test("formatDuration() prints as Go's Duration.String", () => {
  const cases: Array<[number, string]> = [
    [0, "0s"],
    [30_000, "30s"],
    [1000, "1s"],
    [90_000, "1m30s"],
    [900_000, "15m0s"],
    [3_600_000, "1h0m0s"],
    [86_400_000, "24h0m0s"],
    [500, "500ms"],
    [1500, "1.5s"],
    [1.5, "1.5ms"],
    [0.001, "1\u00b5s"],
    [0.000001, "1ns"],
    [-1000, "-1s"],
    [3_661_001, "1h1m1.001s"],
  ];
  for (const [ms, text] of cases) assert.equal(formatDuration(ms), text, String(ms));
});

Deno.test("formatDuration() output parses back to the same value", () => {
  for (const ms of [0, 1, 250, 1000, 1500, 61_000, 3_600_000, 86_400_000, 123_456_789]) {
    assert.equal(parseDuration(formatDuration(ms)), ms);
  }
});
