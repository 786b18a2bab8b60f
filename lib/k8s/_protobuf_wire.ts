/**
 * Protobuf's wire format, read from one buffer: what kube-apiserver's
 * `application/vnd.kubernetes.protobuf` answers are made of (proto2 messages generated from the
 * API's Go types). Only reading; fields are visited in order and the caller picks the ones it
 * wants by number, passing over the rest by their wire type.
 */

/** A body that does not follow the wire format (cut short, or a field of an unknown type). */
export class ProtobufError extends SyntaxError {
  constructor(message: string) {
    super(`Malformed protobuf: ${message}`);
    this.name = "ProtobufError";
  }
}

/** Wire types (the low three bits of a field's tag). */
export const VARINT = 0;
export const FIXED64 = 1;
export const LENGTH_DELIMITED = 2;
export const FIXED32 = 5;

const utf8 = new TextDecoder();
/** Strings at most this long are built from their bytes when ASCII (cheaper than a decode). */
const SHORT_STRING = 24;

/** Reads the fields of one message, between `pos` and `end` of `bytes`. */
export class ProtoReader {
  readonly bytes: Uint8Array;
  pos: number;
  readonly end: number;
  /** The wire type of the field whose tag was read last. */
  wireType = 0;
  /** Bits 32-63 of the last varint read by varint(). */
  #high = 0;
  /** One instance of each value read by sharedString(), for the whole answer. */
  readonly #shared: Map<string, string>;

  constructor(
    bytes: Uint8Array,
    start = 0,
    end = bytes.length,
    shared: Map<string, string> = new Map(),
  ) {
    this.bytes = bytes;
    this.pos = start;
    this.end = end;
    this.#shared = shared;
  }

  /** The next field's number, 0 when the message has no more fields. */
  next(): number {
    if (this.pos >= this.end) return 0;
    const tag = this.#varint();
    this.wireType = tag & 7;
    const field = tag >>> 3;
    if (field === 0) throw new ProtobufError(`field number 0 at byte ${this.pos}`);
    return field;
  }

  /** Bits 0-31 of a varint, unsigned; bits 32-63 are kept for int64(). */
  #varint(): number {
    const b = this.bytes;
    let low = 0, high = 0, shift = 0, i = this.pos;
    for (;;) {
      if (i >= this.end) throw new ProtobufError("varint cut short");
      const c = b[i++]!;
      if (shift < 28) low |= (c & 0x7f) << shift;
      else if (shift === 28) {
        low |= (c & 0x0f) << 28;
        high = (c & 0x7f) >>> 4;
      } else if (shift < 64) high |= (c & 0x7f) << (shift - 32);
      else throw new ProtobufError("varint longer than 10 bytes");
      shift += 7;
      if (c < 0x80) break;
    }
    this.pos = i;
    this.#high = high;
    return low >>> 0;
  }

  /** An int32 field (negative values are sent sign-extended to 64 bits). */
  int32(): number {
    this.#expect(VARINT);
    return this.#varint() | 0;
  }

  /** An int64 field, exact while it stays within ±2^53. */
  int64(): number {
    this.#expect(VARINT);
    const low = this.#varint();
    return (this.#high | 0) * 0x100000000 + low;
  }

  bool(): boolean {
    this.#expect(VARINT);
    return this.#varint() !== 0;
  }

  /** The bounds of a length-delimited field's bytes, consumed. */
  #span(): number {
    const length = this.#varint();
    const start = this.pos;
    if (length > this.end - start) throw new ProtobufError("length past the end of its message");
    this.pos = start + length;
    return start;
  }

  /** A string field (UTF-8; invalid bytes become U+FFFD, as JSON.parse of Go's JSON has them). */
  string(): string {
    this.#expect(LENGTH_DELIMITED);
    const start = this.#span(), end = this.pos, b = this.bytes;
    if (end - start > SHORT_STRING) return utf8.decode(b.subarray(start, end));
    for (let i = start; i < end; i++) {
      if (b[i]! >= 0x80) return utf8.decode(b.subarray(start, end));
    }
    // One flat string: appended a character at a time it would be a chain of cons strings,
    // several times its size for as long as the tracker keeps it.
    return String.fromCharCode.apply(null, b.subarray(start, end) as unknown as number[]);
  }

  /**
   * A string field whose values repeat across objects (node names, zones, protocols, label
   * keys): every occurrence in the answer is the same string, as JSON.parse's are, instead of
   * one copy per endpoint for as long as the tracker keeps it.
   */
  sharedString(): string {
    const s = this.string();
    const known = this.#shared.get(s);
    if (known !== undefined) return known;
    this.#shared.set(s, s);
    return s;
  }

  /** An embedded message's fields, as a reader of their own. */
  message(): ProtoReader {
    this.#expect(LENGTH_DELIMITED);
    const start = this.#span();
    return new ProtoReader(this.bytes, start, this.pos, this.#shared);
  }

  /** A bytes field's bounds [start, end) within `bytes`, consumed. */
  span(): [number, number] {
    this.#expect(LENGTH_DELIMITED);
    const start = this.#span();
    return [start, this.pos];
  }

  /** Passes over the value of the field whose tag was just read. */
  skip(): void {
    switch (this.wireType) {
      case VARINT:
        this.#varint();
        return;
      case FIXED64:
        this.#advance(8);
        return;
      case LENGTH_DELIMITED:
        this.#span();
        return;
      case FIXED32:
        this.#advance(4);
        return;
      default:
        throw new ProtobufError(`wire type ${this.wireType} at byte ${this.pos}`);
    }
  }

  #advance(n: number): void {
    if (n > this.end - this.pos) throw new ProtobufError("fixed-size value cut short");
    this.pos += n;
  }

  /** A value of another wire type than the schema's would be misread: refused instead. */
  #expect(wireType: number): void {
    if (this.wireType !== wireType) {
      throw new ProtobufError(
        `field of wire type ${this.wireType} where ${wireType} is expected, byte ${this.pos}`,
      );
    }
  }
}
