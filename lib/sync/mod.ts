/** Public face of lib/sync: the clock seam, abortable sleep and the bounded-frequency sync runner. */
export * from "./clock.ts";
export * from "./sleep.ts";
export * from "./bounded_frequency_runner.ts";
