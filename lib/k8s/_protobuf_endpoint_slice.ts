/**
 * A discovery/v1 EndpointSlice from its protobuf encoding, with the members
 * lib/proxy/validate_endpoint_slice.ts reads, in their JSON shape (see _protobuf_meta.ts).
 * Field numbers are those of k8s.io/api/discovery/v1/generated.proto; every other field
 * (targetRef, hostname, deprecatedTopology, appProtocol) is passed over unread.
 */
import { readObjectMeta } from "./_protobuf_meta.ts";
import type { ProtoReader } from "./_protobuf_wire.ts";

/** Conditions: ready, serving and terminating are pointers in Go, sent whenever set. */
function readConditions(r: ProtoReader): Record<string, unknown> {
  const conditions: Record<string, unknown> = {};
  for (let f = r.next(); f !== 0; f = r.next()) {
    if (f === 1) conditions.ready = r.bool();
    else if (f === 2) conditions.serving = r.bool();
    else if (f === 3) conditions.terminating = r.bool();
    else r.skip();
  }
  return conditions;
}

/** A hint list entry (ForZone, ForNode): its name, written even when empty. */
function readHintName(r: ProtoReader): Record<string, unknown> {
  let name = "";
  for (let f = r.next(); f !== 0; f = r.next()) {
    if (f === 1) name = r.sharedString();
    else r.skip();
  }
  return { name };
}

function readHints(r: ProtoReader): Record<string, unknown> {
  const hints: Record<string, unknown[]> = {};
  for (let f = r.next(); f !== 0; f = r.next()) {
    if (f === 1) (hints.forZones ??= []).push(readHintName(r.message()));
    else if (f === 2) (hints.forNodes ??= []).push(readHintName(r.message()));
    else r.skip();
  }
  return hints;
}

function readEndpoint(r: ProtoReader): Record<string, unknown> {
  // `addresses` has no omitempty: JSON writes null for none.
  const endpoint: Record<string, unknown> = { addresses: null, conditions: {} };
  let addresses: string[] | undefined;
  for (let f = r.next(); f !== 0; f = r.next()) {
    switch (f) {
      case 1:
        (addresses ??= []).push(r.string());
        break;
      case 2:
        endpoint.conditions = readConditions(r.message());
        break;
      case 6:
        endpoint.nodeName = r.sharedString(); // a pointer in Go, as are zone and hints
        break;
      case 7:
        endpoint.zone = r.sharedString();
        break;
      case 8:
        endpoint.hints = readHints(r.message());
        break;
      default:
        r.skip();
    }
  }
  if (addresses !== undefined) endpoint.addresses = addresses;
  return endpoint;
}

/** An EndpointPort: every member is a pointer in Go, sent whenever set. */
function readPort(r: ProtoReader): Record<string, unknown> {
  const port: Record<string, unknown> = {};
  for (let f = r.next(); f !== 0; f = r.next()) {
    if (f === 1) port.name = r.sharedString();
    else if (f === 2) port.protocol = r.sharedString();
    else if (f === 3) port.port = r.int32();
    else r.skip();
  }
  return port;
}

/** Reads one EndpointSlice. */
export function readEndpointSlice(r: ProtoReader): Record<string, unknown> {
  // addressType, endpoints and ports have no omitempty: JSON writes them ("", null) always.
  const slice: Record<string, unknown> = { addressType: "", endpoints: null, ports: null };
  let endpoints: unknown[] | undefined, ports: unknown[] | undefined;
  for (let f = r.next(); f !== 0; f = r.next()) {
    if (f === 1) slice.metadata = readObjectMeta(r.message());
    else if (f === 2) (endpoints ??= []).push(readEndpoint(r.message()));
    else if (f === 3) (ports ??= []).push(readPort(r.message()));
    else if (f === 4) slice.addressType = r.sharedString();
    else r.skip();
  }
  if (endpoints !== undefined) slice.endpoints = endpoints;
  if (ports !== undefined) slice.ports = ports;
  return slice;
}
