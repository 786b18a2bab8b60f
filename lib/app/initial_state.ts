/** Loads the manifests once, without watching: what `render` works from. */
import type { Logger } from "../log/mod.ts";
import { createProxyTracker, type ProxyTracker } from "../proxy/mod.ts";
import { createManifestSource } from "../source/mod.ts";
import type { TrackerSettings } from "./tracker_settings.ts";

/** Reads `path` into a fresh tracker and stops the source again. */
export async function loadManifestState(
  path: string,
  nodeName: string,
  settings: TrackerSettings,
  logger: Logger,
): Promise<ProxyTracker> {
  const tracker = createProxyTracker({
    ...settings,
    nodeName,
    onInvalid: (kind, key, reason) =>
      logger.error("Skipping invalid object", { kind, object: key, reason }),
  });
  const abort = new AbortController();
  const source = createManifestSource({
    path,
    nodeName,
    logger,
    sink: { onEvent: (e) => tracker.handleEvent(e), onSynced: (k) => tracker.markSynced(k) },
  });
  try {
    await source.start(abort.signal);
  } finally {
    abort.abort();
    await source.stopped();
  }
  return tracker;
}
