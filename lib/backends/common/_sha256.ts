/**
 * SHA-256 (FIPS 180-4) of a string's UTF-8 bytes, synchronous and allocation-light: renders
 * hash every service and endpoint name, and node:crypto's createHash costs ~5 µs a call
 * (an object and two ops each), which made hashing a third of a first render.
 */

const K = new Int32Array([
  0x428a2f98,
  0x71374491,
  0xb5c0fbcf,
  0xe9b5dba5,
  0x3956c25b,
  0x59f111f1,
  0x923f82a4,
  0xab1c5ed5,
  0xd807aa98,
  0x12835b01,
  0x243185be,
  0x550c7dc3,
  0x72be5d74,
  0x80deb1fe,
  0x9bdc06a7,
  0xc19bf174,
  0xe49b69c1,
  0xefbe4786,
  0x0fc19dc6,
  0x240ca1cc,
  0x2de92c6f,
  0x4a7484aa,
  0x5cb0a9dc,
  0x76f988da,
  0x983e5152,
  0xa831c66d,
  0xb00327c8,
  0xbf597fc7,
  0xc6e00bf3,
  0xd5a79147,
  0x06ca6351,
  0x14292967,
  0x27b70a85,
  0x2e1b2138,
  0x4d2c6dfc,
  0x53380d13,
  0x650a7354,
  0x766a0abb,
  0x81c2c92e,
  0x92722c85,
  0xa2bfe8a1,
  0xa81a664b,
  0xc24b8b70,
  0xc76c51a3,
  0xd192e819,
  0xd6990624,
  0xf40e3585,
  0x106aa070,
  0x19a4c116,
  0x1e376c08,
  0x2748774c,
  0x34b0bcb5,
  0x391c0cb3,
  0x4ed8aa4a,
  0x5b9cca4f,
  0x682e6ff3,
  0x748f82ee,
  0x78a5636f,
  0x84c87814,
  0x8cc70208,
  0x90befffa,
  0xa4506ceb,
  0xbef9a3f7,
  0xc67178f2,
]);

const INITIAL = new Int32Array([
  0x6a09e667,
  0xbb67ae85,
  0x3c6ef372,
  0xa54ff53a,
  0x510e527f,
  0x9b05688c,
  0x1f83d9ab,
  0x5be0cd19,
]);

const encoder = new TextEncoder();
const w = new Int32Array(64);
const h = new Int32Array(8);
/**
 * The buffer inputs of up to its size are encoded into, kept between calls (chain names hash
 * inputs of ~50 bytes). A longer input gets a buffer of its own, dropped after: keeping the
 * largest one (the digest of KUBE-SERVICES) would hold that much for the process's life.
 */
const kept = new Uint8Array(16 * 1024);

/**
 * One 64-byte block into `h`. The rotations are written out: the program runs with V8's
 * optimizing compiler off (`--no-opt`), which leaves a helper function a real call each time,
 * 576 of them per block.
 */
function compress(bytes: Uint8Array, offset: number): void {
  for (let i = 0; i < 16; i++) {
    const j = offset + i * 4;
    w[i] = (bytes[j]! << 24) | (bytes[j + 1]! << 16) | (bytes[j + 2]! << 8) | bytes[j + 3]!;
  }
  for (let i = 16; i < 64; i++) {
    const a = w[i - 15]!;
    const b = w[i - 2]!;
    const s0 = ((a >>> 7) | (a << 25)) ^ ((a >>> 18) | (a << 14)) ^ (a >>> 3);
    const s1 = ((b >>> 17) | (b << 15)) ^ ((b >>> 19) | (b << 13)) ^ (b >>> 10);
    w[i] = (w[i - 16]! + s0 + w[i - 7]! + s1) | 0;
  }
  let a = h[0]!, b = h[1]!, c = h[2]!, d = h[3]!, e = h[4]!, f = h[5]!, g = h[6]!, k = h[7]!;
  for (let i = 0; i < 64; i++) {
    const s1 = ((e >>> 6) | (e << 26)) ^ ((e >>> 11) | (e << 21)) ^ ((e >>> 25) | (e << 7));
    const t1 = (k + s1 + ((e & f) ^ (~e & g)) + K[i]! + w[i]!) | 0;
    const s0 = ((a >>> 2) | (a << 30)) ^ ((a >>> 13) | (a << 19)) ^ ((a >>> 22) | (a << 10));
    const t2 = (s0 + ((a & b) ^ (a & c) ^ (b & c))) | 0;
    k = g;
    g = f;
    f = e;
    e = (d + t1) | 0;
    d = c;
    c = b;
    b = a;
    a = (t1 + t2) | 0;
  }
  h[0] = (h[0]! + a) | 0;
  h[1] = (h[1]! + b) | 0;
  h[2] = (h[2]! + c) | 0;
  h[3] = (h[3]! + d) | 0;
  h[4] = (h[4]! + e) | 0;
  h[5] = (h[5]! + f) | 0;
  h[6] = (h[6]! + g) | 0;
  h[7] = (h[7]! + k) | 0;
}

/**
 * Writes `input` as UTF-8 into `buffer` (which has room), returning the byte count. ASCII, as
 * every Kubernetes name is, is copied a character at a time: cheaper than encodeInto's call
 * into the runtime for a name's ~50 characters.
 */
function encode(input: string, buffer: Uint8Array): number {
  const n = input.length;
  for (let i = 0; i < n; i++) {
    const code = input.charCodeAt(i);
    if (code > 0x7f) return encoder.encodeInto(input, buffer).written;
    buffer[i] = code;
  }
  return n;
}

/** The SHA-256 digest (32 bytes) of `input` encoded as UTF-8. */
export function sha256(input: string): Uint8Array {
  // UTF-8 takes at most 3 bytes per UTF-16 unit; 9 more for the padding and length.
  const room = input.length * 3 + 72;
  const buffer = room <= kept.length ? kept : new Uint8Array(room);
  const length = encode(input, buffer);
  const blocks = Math.ceil((length + 9) / 64);
  const end = blocks * 64;
  buffer.fill(0, length, end);
  buffer[length] = 0x80;
  const bits = length * 8;
  buffer[end - 5] = Math.floor(bits / 2 ** 32) & 0xff;
  buffer[end - 4] = (bits >>> 24) & 0xff;
  buffer[end - 3] = (bits >>> 16) & 0xff;
  buffer[end - 2] = (bits >>> 8) & 0xff;
  buffer[end - 1] = bits & 0xff;
  h.set(INITIAL);
  for (let offset = 0; offset < end; offset += 64) compress(buffer, offset);
  const out = new Uint8Array(32);
  for (let i = 0; i < 8; i++) {
    const v = h[i]!;
    out[i * 4] = v >>> 24;
    out[i * 4 + 1] = (v >>> 16) & 0xff;
    out[i * 4 + 2] = (v >>> 8) & 0xff;
    out[i * 4 + 3] = v & 0xff;
  }
  return out;
}
