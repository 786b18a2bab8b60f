/**
 * Differential test of IPVS mode: the tracer over what the renderer writes for generated
 * states (the renderer follows upstream's IPVS proxier) must give the reference model's
 * decision for every generated packet; any disagreement fails with its shrunk state.
 * `deno task fuzz` runs it larger (TRACE_FUZZ_SIZE service ports, TRACE_FUZZ_SEED).
 */
import { deepStrictEqual } from "node:assert/strict";
import { ipvsTracer } from "../../lib/backends/ipvs/tracer.ts";
import {
  describeDisagreement,
  fuzzSettings,
  runDifferential,
} from "../support/trace_differential.ts";

Deno.test("ipvs rules traced agree with the reference model on generated states", () => {
  const { size, seed, states } = fuzzSettings({ size: 40, seed: 13, states: 1 });
  const { disagreements, packets } = runDifferential({
    mode: "ipvs",
    tracer: ipvsTracer,
    seed,
    size,
    states,
  });
  console.log(`ipvs differential: seed ${seed}, ${size} service ports, ${packets} packets`);
  deepStrictEqual(disagreements.map(describeDisagreement), []);
});
