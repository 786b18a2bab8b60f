/**
 * Differential test of iptables mode: the tracer over the rules the renderer writes for
 * generated states must give the reference model's decision for every generated packet.
 * `deno task fuzz` runs it larger (TRACE_FUZZ_SIZE service ports, TRACE_FUZZ_SEED).
 */
import { deepStrictEqual } from "node:assert/strict";
import { iptablesTracer } from "../../lib/backends/iptables/tracer.ts";
import {
  describeDisagreement,
  fuzzSettings,
  runDifferential,
} from "../support/trace_differential.ts";

Deno.test("iptables rules traced agree with the reference model on generated states", () => {
  const { size, seed, states } = fuzzSettings({ size: 40, seed: 13, states: 1 });
  const { disagreements, packets } = runDifferential({
    mode: "iptables",
    tracer: iptablesTracer,
    seed,
    size,
    states,
  });
  console.log(`iptables differential: seed ${seed}, ${size} service ports, ${packets} packets`);
  deepStrictEqual(disagreements.map(describeDisagreement), []);
});
