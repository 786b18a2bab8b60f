/**
 * IPVS virtual and real servers as plain data, their keys, and their spelling in ipvsadm's
 * save/restore format (`-A -t 172.30.0.41:80 -s rr -p 10800`, `-a -t … -r 10.0.0.2:80 -m -w 1`).
 */
import { joinHostPort } from "../../net/mod.ts";
import type { Protocol } from "../../proxy/mod.ts";

/** One real server (destination) of a virtual server. */
export interface RealServer {
  readonly address: string;
  readonly port: number;
  readonly weight: number;
  /** Connection counts as `ipvsadm -Ln` shows them; absent when read from `-Sn`. */
  readonly activeConns?: number;
  readonly inactiveConns?: number;
}

/** One virtual server (IPVS service) on an address, port and protocol. */
export interface VirtualServer {
  readonly address: string;
  readonly port: number;
  readonly protocol: Protocol;
  readonly scheduler: string;
  /** ClientIP affinity timeout in seconds (`-p`); 0 = not persistent. */
  readonly persistentTimeout: number;
  /** Scheduler flags (`-b`), sorted; upstream sets only `mh-port` for the mh scheduler. */
  readonly schedFlags: readonly string[];
}

/** A virtual server with its real servers keyed by realServerKey. */
export interface VirtualServerState {
  readonly vs: VirtualServer;
  readonly realServers: ReadonlyMap<string, RealServer>;
}

/** Virtual servers keyed by virtualServerKey: what the kernel holds, or what a sync wants. */
export type IpvsTable = ReadonlyMap<string, VirtualServerState>;

/** `ip:port/PROTO` (IPv6 in brackets), the key upstream's VirtualServer.String() gives. */
export function virtualServerKey(vs: Pick<VirtualServer, "address" | "port" | "protocol">): string {
  return `${joinHostPort(vs.address, vs.port)}/${vs.protocol}`;
}

/** `ip:port` (IPv6 in brackets), the key of a real server inside its virtual server. */
export function realServerKey(rs: Pick<RealServer, "address" | "port">): string {
  return joinHostPort(rs.address, rs.port);
}

/** Whether two virtual servers differ in anything `-E` changes. */
export function virtualServerChanged(a: VirtualServer, b: VirtualServer): boolean {
  return a.scheduler !== b.scheduler || a.persistentTimeout !== b.persistentTimeout ||
    a.schedFlags.join(",") !== b.schedFlags.join(",");
}

const PROTOCOL_FLAG: Readonly<Record<Protocol, string>> = {
  TCP: "-t",
  UDP: "-u",
  SCTP: "--sctp-service",
};

/** The service selector of a virtual server: `-t 172.30.0.41:80`. */
export function serviceArgs(vs: Pick<VirtualServer, "address" | "port" | "protocol">): string {
  return `${PROTOCOL_FLAG[vs.protocol]} ${joinHostPort(vs.address, vs.port)}`;
}

/** The `-A` (add) or `-E` (edit) line of a virtual server. */
export function virtualServerLine(op: "-A" | "-E", vs: VirtualServer): string {
  let line = `${op} ${serviceArgs(vs)} -s ${vs.scheduler}`;
  if (vs.schedFlags.length > 0) line += ` -b ${vs.schedFlags.join(",")}`;
  if (vs.persistentTimeout > 0) line += ` -p ${vs.persistentTimeout}`;
  return line;
}

/** The `-D` (delete) line of a virtual server; the kernel drops its real servers with it. */
export function deleteVirtualServerLine(vs: VirtualServer): string {
  return `-D ${serviceArgs(vs)}`;
}

/** The `-a` (add) or `-e` (edit) line of a real server: masquerading, as upstream's default. */
export function realServerLine(op: "-a" | "-e", vs: VirtualServer, rs: RealServer): string {
  return `${op} ${serviceArgs(vs)} -r ${realServerKey(rs)} -m -w ${rs.weight}`;
}

/** The `-d` (delete) line of a real server. */
export function deleteRealServerLine(vs: VirtualServer, rs: RealServer): string {
  return `-d ${serviceArgs(vs)} -r ${realServerKey(rs)}`;
}
