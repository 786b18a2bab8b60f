import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { sha256 } from "../../../lib/backends/common/_sha256.ts";
import { nameHash } from "../../../lib/backends/common/name_hash.ts";

function reference(input: string): string {
  return createHash("sha256").update(input).digest("hex");
}

function hex(bytes: Uint8Array): string {
  return [...bytes].map((b) => b.toString(16).padStart(2, "0")).join("");
}

Deno.test("sha256() matches FIPS 180-4's examples", () => {
  assert.equal(hex(sha256("")), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  assert.equal(
    hex(sha256("abc")),
    "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad",
  );
  assert.equal(
    hex(sha256("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq")),
    "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1",
  );
});

Deno.test("sha256() matches node:crypto at every length around the block boundaries and beyond", () => {
  for (let n = 0; n <= 200; n++) {
    const input = "ns1/svc:p80/TCP".repeat(20).slice(0, n);
    assert.equal(hex(sha256(input)), reference(input), `length ${n}`);
  }
  const long = "x".repeat(100_000);
  assert.equal(hex(sha256(long)), reference(long));
  // Around the size of the buffer kept between calls (16 KiB), with 2- and 3-byte characters.
  for (let n = 5_400; n <= 5_480; n++) {
    const input = "aé€".repeat(2_000).slice(0, n);
    assert.equal(hex(sha256(input)), reference(input), `length ${n}`);
    assert.equal(
      hex(sha256("abc")),
      "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad",
    );
  }
});

Deno.test("sha256() hashes the UTF-8 bytes of any string, as node:crypto does", () => {
  let seed = 7;
  const next = () => (seed = (seed * 1103515245 + 12345) % 2 ** 31);
  for (let i = 0; i < 500; i++) {
    let s = "";
    const len = next() % 90;
    for (let k = 0; k < len; k++) {
      const pick = next() % 4;
      s += pick === 0
        ? String.fromCharCode(0x20 + (next() % 95))
        : pick === 1
        ? String.fromCharCode(0xa0 + (next() % 0x700))
        : pick === 2
        ? String.fromCodePoint(0x1f300 + (next() % 200))
        : "ü";
    }
    assert.equal(hex(sha256(s)), reference(s), JSON.stringify(s));
  }
});

/** base32 of node:crypto's SHA-256, written out bit by bit. */
function referenceBase32(input: string): string {
  const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567";
  let bits = "";
  for (const b of createHash("sha256").update(input).digest()) {
    bits += b.toString(2).padStart(8, "0");
  }
  let out = "";
  for (let i = 0; i + 5 <= bits.length; i += 5) out += alphabet[parseInt(bits.slice(i, i + 5), 2)];
  return out;
}

Deno.test("nameHash() keeps upstream's chain names (base32 of the SHA-256, cut)", () => {
  // KUBE-SVC- + hash of "ns1/svc1:p80" + "tcp", as upstream's servicePortChainName makes it.
  const input = "ns1/svc1:p80tcp";
  assert.equal(nameHash(input, 16), referenceBase32(input).slice(0, 16));
  assert.equal(nameHash(input, 8), referenceBase32(input).slice(0, 8));
  // Every cut of the 51 whole characters, with and without a prefix, for assorted inputs.
  for (let i = 0; i < 40; i++) {
    const input = `ns${i}/svc-${"x".repeat(i * 7)}:p${i}tcp10.${i}.0.1:80`;
    const expected = referenceBase32(input);
    for (let length = 1; length <= 51; length++) {
      assert.equal(nameHash(input, length), expected.slice(0, length), `${input} ${length}`);
      assert.equal(nameHash(input, length, "KUBE-FW-"), "KUBE-FW-" + expected.slice(0, length));
    }
  }
});

Deno.test("nameHash() puts a prefix before the hash, for iptables' 16 and nftables' 8 characters", () => {
  for (const length of [16, 8]) {
    const input = "ns1/svc1:p80tcp10.180.0.1:80";
    assert.equal(nameHash(input, length, "KUBE-SEP-"), "KUBE-SEP-" + nameHash(input, length));
    assert.equal(nameHash(input, length, "KUBE-SEP-").length, 9 + length);
  }
});
