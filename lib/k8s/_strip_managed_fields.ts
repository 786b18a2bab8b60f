/**
 * client-go's TransformStripManagedFields for our caches: `metadata.managedFields` (server-side
 * apply bookkeeping, often larger than the object itself: an EndpointSlice's lists every
 * endpoint field) is read by nothing here, so it is dropped before an object is cached or handed
 * on.
 */
import type { KubeObject } from "./watch_lines.ts";

/** `object` without `metadata.managedFields`; the same object when it has none. */
export function stripManagedFields<T extends KubeObject>(object: T): T {
  const metadata = object.metadata as Record<string, unknown> | undefined;
  if (metadata === undefined || !("managedFields" in metadata)) return object;
  const { managedFields: _dropped, ...rest } = metadata;
  return { ...object, metadata: rest };
}
