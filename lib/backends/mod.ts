/** Public face of lib/backends: the backend interface and the map of available modes. */
export * from "./backend.ts";
