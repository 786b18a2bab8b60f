/** Public face of lib/log: the leveled logger. */
export * from "./logger.ts";
export * from "./error_message.ts";
