/**
 * The parts every kube-apiserver protobuf answer shares: the envelope (the `k8s\0` magic and a
 * runtime.Unknown around the object's bytes), a list's ListMeta and items, an object's
 * ObjectMeta, and the Status of a failed request. Each is read into the shape its JSON
 * encoding has (a member only where Go's JSON would write one), so the code after the
 * transport reads one shape whatever the encoding. Field numbers are those of the API's
 * generated.proto files (k8s.io/apimachinery/pkg/{runtime,apis/meta/v1}).
 */
import { ProtobufError, ProtoReader } from "./_protobuf_wire.ts";

/** The media type of kube-apiserver's protobuf encoding. */
export const PROTOBUF_MEDIA_TYPE = "application/vnd.kubernetes.protobuf";

const MAGIC = [0x6b, 0x38, 0x73, 0x00]; // "k8s\0"

/** An envelope's contents: the object's kind and the bounds of its own bytes. */
export interface ProtobufEnvelope {
  readonly apiVersion: string;
  readonly kind: string;
  readonly raw: ProtoReader;
}

/** Opens the envelope of a protobuf answer; throws ProtobufError for anything else. */
export function openEnvelope(bytes: Uint8Array): ProtobufEnvelope {
  if (bytes.length < MAGIC.length || MAGIC.some((b, i) => bytes[i] !== b)) {
    throw new ProtobufError("the answer does not start with the k8s\\0 magic");
  }
  const r = new ProtoReader(bytes, MAGIC.length);
  let apiVersion = "", kind = "", encoding = "";
  let raw: ProtoReader | undefined;
  for (let f = r.next(); f !== 0; f = r.next()) {
    if (f === 1) {
      const t = r.message();
      for (let g = t.next(); g !== 0; g = t.next()) {
        if (g === 1) apiVersion = t.string();
        else if (g === 2) kind = t.string();
        else t.skip();
      }
    } else if (f === 2) raw = r.message();
    else if (f === 3) encoding = r.string();
    else r.skip();
  }
  // The server never compresses inside the envelope (HTTP does that), so this is not ours.
  if (encoding !== "") throw new ProtobufError(`content encoding ${JSON.stringify(encoding)}`);
  return { apiVersion, kind, raw: raw ?? new ProtoReader(bytes, bytes.length) };
}

/** A list's metadata, as JSON has it, and where each item's bytes are. */
export interface ProtobufList {
  readonly metadata: Record<string, unknown>;
  /** Start and end of each item, in pairs. */
  readonly items: readonly number[];
}

/** Reads a list (any kind's XList: ListMeta is field 1, the items field 2). */
export function readList(r: ProtoReader): ProtobufList {
  const metadata: Record<string, unknown> = {};
  const items: number[] = [];
  for (let f = r.next(); f !== 0; f = r.next()) {
    if (f === 1) {
      const m = r.message();
      for (let g = m.next(); g !== 0; g = m.next()) {
        if (g === 2) setString(metadata, "resourceVersion", m.string());
        else if (g === 3) setString(metadata, "continue", m.string());
        else if (g === 4) metadata.remainingItemCount = m.int64();
        else m.skip();
      }
    } else if (f === 2) items.push(...r.span());
    else r.skip();
  }
  return { metadata, items };
}

/** Sets a string member the way Go's `omitempty` writes it: not at all when empty. */
export function setString(target: Record<string, unknown>, key: string, value: string): void {
  if (value !== "") target[key] = value;
}

/** Sets a number member the way Go's `omitempty` writes it: not at all when 0. */
export function setNumber(target: Record<string, unknown>, key: string, value: number): void {
  if (value !== 0) target[key] = value;
}

/** A map<string, string> entry (key 1, value 2), added to `target`. */
export function readMapEntry(r: ProtoReader, target: Record<string, string>): void {
  const e = r.message();
  let key = "", value = "";
  for (let f = e.next(); f !== 0; f = e.next()) {
    if (f === 1) key = e.sharedString();
    else if (f === 2) value = e.sharedString();
    else e.skip();
  }
  target[key] = value;
}

/**
 * An ObjectMeta's members the proxy reads: name, namespace, uid, resourceVersion, labels and
 * annotations. The rest (managedFields above all) is passed over unread.
 */
export function readObjectMeta(r: ProtoReader): Record<string, unknown> {
  const meta: Record<string, unknown> = {};
  let labels: Record<string, string> | undefined;
  let annotations: Record<string, string> | undefined;
  for (let f = r.next(); f !== 0; f = r.next()) {
    switch (f) {
      case 1:
        setString(meta, "name", r.string());
        break;
      case 3:
        setString(meta, "namespace", r.sharedString());
        break;
      case 5:
        setString(meta, "uid", r.string());
        break;
      case 6:
        setString(meta, "resourceVersion", r.string());
        break;
      case 11:
        readMapEntry(r, labels ??= {});
        break;
      case 12:
        readMapEntry(r, annotations ??= {});
        break;
      default:
        r.skip();
    }
  }
  if (labels !== undefined) meta.labels = labels;
  if (annotations !== undefined) meta.annotations = annotations;
  return meta;
}

/** A Status (meta/v1), as JSON has the members lib/k8s/_api_errors.ts reads. */
export function readStatus(r: ProtoReader): Record<string, unknown> {
  const status: Record<string, unknown> = {};
  for (let f = r.next(); f !== 0; f = r.next()) {
    if (f === 2) setString(status, "status", r.string());
    else if (f === 3) setString(status, "message", r.string());
    else if (f === 4) setString(status, "reason", r.string());
    else if (f === 5) status.details = readStatusDetails(r.message());
    else if (f === 6) setNumber(status, "code", r.int32());
    else r.skip();
  }
  return status;
}

function readStatusDetails(r: ProtoReader): Record<string, unknown> {
  const details: Record<string, unknown> = {};
  const causes: Record<string, unknown>[] = [];
  for (let f = r.next(); f !== 0; f = r.next()) {
    if (f === 4) {
      const c = r.message(), cause: Record<string, unknown> = {};
      for (let g = c.next(); g !== 0; g = c.next()) {
        if (g === 1) setString(cause, "reason", c.string());
        else if (g === 2) setString(cause, "message", c.string());
        else if (g === 3) setString(cause, "field", c.string());
        else c.skip();
      }
      causes.push(cause);
    } else if (f === 5) setNumber(details, "retryAfterSeconds", r.int32());
    else r.skip();
  }
  if (causes.length > 0) details.causes = causes;
  return details;
}
