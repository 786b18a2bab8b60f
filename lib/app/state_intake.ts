/**
 * Where source events enter the proxy: the tracker, with the change counters and the log line of
 * a rejected object. It exists before the mode's start checks run, so the first lists, which
 * often arrive first, are decoded into the tracker as they come instead of waiting raw.
 */
import type { Logger } from "../log/mod.ts";
import type { ProxyMetrics } from "../metrics/mod.ts";
import { createProxyTracker, type ProxyTracker } from "../proxy/mod.ts";
import type { ObjectEvent } from "../source/mod.ts";
import { type Clock, systemClock } from "../sync/mod.ts";
import type { TrackerSettings } from "./tracker_settings.ts";

/** What createStateIntake needs. */
export interface StateIntakeOptions {
  /** This node's name (--hostname-override or the hostname). */
  readonly nodeName: string;
  /** --node-ip: the node's addresses when the Node object gives none of a family. */
  readonly fallbackNodeIPs?: readonly string[];
  /** --bind-address and the feature gates' say (trackerSettings); default none. */
  readonly settings?: TrackerSettings;
  readonly metrics: ProxyMetrics;
  readonly logger: Logger;
  readonly clock?: Clock;
}

/** The tracker and how events reach it. */
export interface StateIntake {
  readonly tracker: ProxyTracker;
  /** Applies one event and counts it; returns whether a sync is due (ProxyTracker.handleEvent). */
  apply(event: ObjectEvent): boolean;
}

/** Creates the tracker; it does no I/O. */
export function createStateIntake(options: StateIntakeOptions): StateIntake {
  const { metrics, logger } = options;
  const tracker = createProxyTracker({
    ...options.settings,
    nodeName: options.nodeName,
    fallbackNodeIPs: options.fallbackNodeIPs ?? options.settings?.fallbackNodeIPs ?? [],
    // Changes made before we started would report huge latencies from the initial list.
    startTimeMs: (options.clock ?? systemClock).now(),
    onInvalid: (kind, key, reason) => {
      metrics.invalidObjects.inc({ kind });
      logger.error("Skipping invalid object", { kind, object: key, reason });
    },
  });
  return {
    tracker,
    apply(event) {
      const due = tracker.handleEvent(event);
      if (event.kind === "Service") metrics.serviceChangesTotal.inc();
      if (event.kind === "EndpointSlice") metrics.endpointChangesTotal.inc();
      return due;
    },
  };
}
