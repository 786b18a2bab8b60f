/** Public face of lib/log: the leveled logger. */
export { errorMessage } from "./error_message.ts";
export { createLogger, createMemoryLogger, type Logger, silentLogger } from "./logger.ts";
