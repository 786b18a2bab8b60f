/**
 * Graceful termination of IPVS real servers (upstream's graceful_termination.go) as data: a
 * removed TCP real server is set to weight 0 and listed; a periodic check deletes listed ones
 * whose active and inactive connections reached 0. UDP and SCTP real servers are deleted at
 * once (expire_nodest_conn ends their flows). The list lives in memory only, as upstream's.
 */
import type { Protocol } from "../../proxy/mod.ts";
import {
  deleteRealServerLine,
  type IpvsTable,
  type RealServer,
  realServerKey,
  type VirtualServer,
  virtualServerKey,
} from "./virtual_server.ts";

/** How often the draining list is checked, as upstream's rsCheckDeleteInterval. */
export const RS_CHECK_DELETE_INTERVAL_MS = 60_000;

/** A real server kept at weight 0 until its connections are gone. */
export interface DrainingRealServer {
  readonly vs: VirtualServer;
  readonly rs: Pick<RealServer, "address" | "port">;
}

/** The key upstream uses for a listed real server: `vs.String() + "/" + ip:port`. */
export function drainingKey(vsKey: string, rsKey: string): string {
  return `${vsKey}/${rsKey}`;
}

/** Whether a removed real server of this protocol must drain instead of going at once. */
export function needsGracefulTermination(protocol: Protocol): boolean {
  return protocol === "TCP";
}

/** Whether a real server still has connections (unknown counts count as connections). */
export function hasConnections(rs: RealServer): boolean {
  if (rs.activeConns === undefined || rs.inactiveConns === undefined) return true;
  return rs.activeConns + rs.inactiveConns > 0;
}

/** The in-memory list of draining real servers. */
export class GracefulTerminationList {
  readonly #entries = new Map<string, DrainingRealServer>();

  /** Whether the real server `rsKey` of `vsKey` is draining. */
  has(vsKey: string, rsKey: string): boolean {
    return this.#entries.has(drainingKey(vsKey, rsKey));
  }

  /** Lists a real server as draining. */
  add(entry: DrainingRealServer): void {
    this.#entries.set(drainingKey(virtualServerKey(entry.vs), realServerKey(entry.rs)), entry);
  }

  /** Takes one real server off the list. */
  delete(vsKey: string, rsKey: string): void {
    this.#entries.delete(drainingKey(vsKey, rsKey));
  }

  /** Takes every real server of a deleted virtual server off the list. */
  deleteVirtualServer(vsKey: string): void {
    for (const key of [...this.#entries.keys()]) {
      if (key.startsWith(vsKey + "/")) this.#entries.delete(key);
    }
  }

  /** The listed real servers, in listing order. */
  entries(): DrainingRealServer[] {
    return [...this.#entries.values()];
  }

  /** How many real servers are draining. */
  get size(): number {
    return this.#entries.size;
  }
}

/** What one periodic check does: `-d` lines to run, and list entries to drop after. */
export interface DrainCheckPlan {
  readonly lines: readonly string[];
  /** Entries deleted by `lines` (drop once applied) or already gone (drop now). */
  readonly finished: readonly DrainingRealServer[];
  readonly gone: readonly DrainingRealServer[];
}

/** Plans one check of the list against `ipvsadm -Ln` (connection counts needed). */
export function planDrainCheck(list: GracefulTerminationList, current: IpvsTable): DrainCheckPlan {
  const lines: string[] = [];
  const finished: DrainingRealServer[] = [];
  const gone: DrainingRealServer[] = [];
  for (const entry of list.entries()) {
    const rs = current.get(virtualServerKey(entry.vs))?.realServers.get(realServerKey(entry.rs));
    if (rs === undefined) {
      gone.push(entry);
    } else if (!hasConnections(rs)) {
      lines.push(deleteRealServerLine(entry.vs, rs));
      finished.push(entry);
    }
  }
  return { lines, finished, gone };
}
