/** Public face of lib/sync: the clock seam, abortable sleep and the bounded-frequency sync runner. */
export { BoundedFrequencyRunner } from "./bounded_frequency_runner.ts";
export { type Clock, systemClock, type TimerHandle } from "./clock.ts";
export { sleep } from "./sleep.ts";
