/**
 * The cluster a guest test changes step by step: objects per service, written as one `List`
 * manifest (with the proxy's Node) each time a step publishes.
 */
import { list, node1 } from "../../e2e/support/cluster_objects.ts";
import type { ManifestDir } from "../../e2e/support/proxy_process.ts";

/** Services (with their EndpointSlices) by name, published to one manifest file. */
export class ClusterState {
  readonly #objects = new Map<string, readonly unknown[]>();

  constructor(readonly dir: ManifestDir) {}

  /** Sets (or, with `[]`, deletes) one service's objects; `publish()` writes them. */
  set(name: string, objects: readonly unknown[]): this {
    if (objects.length === 0) this.#objects.delete(name);
    else this.#objects.set(name, objects);
    return this;
  }

  /** Writes every object as `cluster.json`, atomically. */
  publish(): Promise<void> {
    return this.dir.write("cluster.json", list([node1(), ...[...this.#objects.values()].flat()]));
  }
}
