/** Public face of lib/sync: the clock seam and the bounded-frequency sync runner. */
export * from "./clock.ts";
export * from "./bounded_frequency_runner.ts";
