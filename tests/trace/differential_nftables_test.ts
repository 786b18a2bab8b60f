/**
 * Differential test of nftables mode: the tracer over what the renderer writes for generated
 * states must give the reference model's decision for every generated packet.
 * `deno task fuzz` runs it larger (TRACE_FUZZ_SIZE service ports, TRACE_FUZZ_SEED).
 */
import { deepStrictEqual } from "node:assert/strict";
import { nftablesTracer } from "../../lib/backends/nftables/tracer.ts";
import {
  describeDisagreement,
  fuzzSettings,
  runDifferential,
} from "../support/trace_differential.ts";

Deno.test("nftables rules traced agree with the reference model on generated states", () => {
  const { size, seed, states } = fuzzSettings({ size: 40, seed: 13, states: 1 });
  const { disagreements, packets } = runDifferential({
    mode: "nftables",
    tracer: nftablesTracer,
    seed,
    size,
    states,
  });
  console.log(`nftables differential: seed ${seed}, ${size} service ports, ${packets} packets`);
  deepStrictEqual(disagreements.map(describeDisagreement), []);
});
