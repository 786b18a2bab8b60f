/** Public face of lib/log: the leveled logger. */
export * from "./logger.ts";
