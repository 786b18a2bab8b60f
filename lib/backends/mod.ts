/** Public face of lib/backends: the backend and mode interfaces and the map of modes. */
export {
  type BackendMetrics,
  type FamilyBackend,
  NO_BACKEND_METRICS,
  type ProxyBackend,
  type SyncReport,
} from "./backend.ts";
export {
  type BackendMetricsFor,
  type ModeDefinition,
  type ModeMetricsExtras,
  ModeUnavailableError,
  type PacketCounters,
  type ProxyModeName,
} from "./mode.ts";
export {
  CLEANUP_ORDER,
  cleanupModes,
  leftoverModes,
  loadMode,
  MODE_CONFIG_SECTIONS,
  removeLeftovers,
} from "./modes.ts";
