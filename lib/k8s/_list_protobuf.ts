/**
 * A list answer in kube-apiserver's protobuf encoding, split into its items as _list_items.ts
 * splits a JSON one. Upstream kube-proxy asks for protobuf; for the two big lists (Services and
 * EndpointSlices) so do we: the server encodes it several times faster than JSON, and the
 * answer is less than half the size. Only the members the proxy reads are decoded (see
 * _protobuf_service.ts and _protobuf_endpoint_slice.ts); the other kinds, and every watch,
 * stay JSON.
 */
import type { ObjectKind } from "../source/mod.ts";
import type { ListText } from "./_list_items.ts";
import { openEnvelope, readList } from "./_protobuf_meta.ts";
import { readEndpointSlice } from "./_protobuf_endpoint_slice.ts";
import { readService } from "./_protobuf_service.ts";
import { ProtobufError, ProtoReader } from "./_protobuf_wire.ts";

/** The kinds whose lists are asked for in protobuf, and how an item of each is read. */
const ITEM_READERS: Partial<Record<ObjectKind, (r: ProtoReader) => Record<string, unknown>>> = {
  Service: readService,
  EndpointSlice: readEndpointSlice,
};

/** True for a kind whose list may be asked for, and read, in protobuf. */
export function listsInProtobuf(kind: ObjectKind): boolean {
  return ITEM_READERS[kind] !== undefined;
}

/**
 * Splits a protobuf list of `kind`; each item is decoded only when asked for. Throws
 * ProtobufError (a SyntaxError) when the answer is not a protobuf list of that kind.
 */
export function splitListProtobuf(bytes: Uint8Array, kind: ObjectKind): ListText {
  const readItem = ITEM_READERS[kind];
  if (readItem === undefined) throw new ProtobufError(`no reader for ${kind} lists`);
  const envelope = openEnvelope(bytes);
  if (envelope.kind !== `${kind}List`) {
    throw new ProtobufError(`a ${kind} list answered with kind ${JSON.stringify(envelope.kind)}`);
  }
  const { metadata, items } = readList(envelope.raw);
  const shared = new Map<string, string>();
  return {
    rest: { apiVersion: envelope.apiVersion, kind: envelope.kind, metadata, items: [] },
    count: items.length / 2,
    item: (i) => readItem(new ProtoReader(bytes, items[2 * i]!, items[2 * i + 1]!, shared)),
  };
}
