/** Public face of lib/backends: the backend and mode interfaces and the map of modes. */
export * from "./backend.ts";
export * from "./mode.ts";
export * from "./modes.ts";
