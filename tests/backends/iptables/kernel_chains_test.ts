import assert from "node:assert/strict";
import {
  chainDigest,
  collectKernelChains,
  heldAsRendered,
  type KernelChains,
} from "../../../lib/backends/iptables/kernel_chains.ts";

function collect(text: string): KernelChains {
  const c = collectKernelChains();
  for (const line of text.split("\n")) c.line(line);
  return c.done();
}

const SAVE = [
  "*nat",
  ":PREROUTING ACCEPT [0:0]",
  ":KUBE-SEP-A - [0:0]",
  ":KUBE-SVC-B - [0:0]",
  ":KUBE-EMPTY - [0:0]",
  "-A PREROUTING -j KUBE-SERVICES",
  "-A KUBE-SEP-A -s 10.0.0.2/32 -j KUBE-MARK-MASQ",
  "-A KUBE-SEP-A -p tcp -m tcp -j DNAT --to-destination 10.0.0.2:80",
  "-A KUBE-SVC-B -j KUBE-SEP-A",
  "COMMIT",
].join("\n");

const LISTED = [
  "-P PREROUTING ACCEPT",
  "-N KUBE-SEP-A",
  "-N KUBE-SVC-B",
  "-N KUBE-EMPTY",
  "-A PREROUTING -j KUBE-SERVICES",
  "-A KUBE-SEP-A -s 10.0.0.2/32 -j KUBE-MARK-MASQ",
  "-A KUBE-SEP-A -p tcp -m tcp -j DNAT --to-destination 10.0.0.2:80",
  "-A KUBE-SVC-B -j KUBE-SEP-A",
].join("\n");

/** KUBE-SEP-A as the renderer writes it. */
const SEP_A = [
  ":KUBE-SEP-A - [0:0]",
  "-A KUBE-SEP-A -s 10.0.0.2 -j KUBE-MARK-MASQ",
  "-A KUBE-SEP-A -m tcp -p tcp -j DNAT --to-destination 10.0.0.2:80",
];

Deno.test("collectKernelChains() digests iptables-save and iptables -S alike, empty chains too", () => {
  const saved = collect(SAVE);
  assert.deepEqual(saved, collect(LISTED));
  assert.deepEqual(
    saved.digests,
    new Set([
      chainDigest("PREROUTING", ["-A PREROUTING -j KUBE-SERVICES"]),
      chainDigest("KUBE-SEP-A", SAVE.split("\n").filter((l) => l.startsWith("-A KUBE-SEP-A"))),
      chainDigest("KUBE-SVC-B", ["-A KUBE-SVC-B -j KUBE-SEP-A"]),
      chainDigest("KUBE-EMPTY", []),
    ]),
  );
  assert.equal(saved.declaresServices, false);
  assert.equal(collect(`${LISTED}\n-N KUBE-SERVICES`).declaresServices, true);
  assert.equal(collect(SAVE.replace(":KUBE-EMPTY", ":KUBE-SERVICES")).declaresServices, true);
  // The name counts: two empty chains, or two chains with the same rules, differ.
  assert.notEqual(chainDigest("KUBE-EMPTY", []), chainDigest("KUBE-OTHER", []));
});

Deno.test("heldAsRendered() is true only when every chain is there with the same rules", () => {
  const kernel = collect(SAVE);
  assert.equal(heldAsRendered(SEP_A, kernel, "IPv4"), true);
  assert.equal(heldAsRendered([":KUBE-EMPTY - [0:0]"], kernel, "IPv4"), true);
  assert.equal(
    heldAsRendered(
      [...SEP_A, ":KUBE-SVC-B - [0:0]", "-A KUBE-SVC-B -j KUBE-SEP-A"],
      kernel,
      "IPv4",
    ),
    true,
  );
  // A rule less, a rule more, another order, another value, a chain the kernel lacks.
  assert.equal(heldAsRendered(SEP_A.slice(0, 2), kernel, "IPv4"), false);
  assert.equal(heldAsRendered([...SEP_A, "-A KUBE-SEP-A -j RETURN"], kernel, "IPv4"), false);
  assert.equal(heldAsRendered([SEP_A[0]!, SEP_A[2]!, SEP_A[1]!], kernel, "IPv4"), false);
  assert.equal(
    heldAsRendered(
      [SEP_A[0]!, SEP_A[1]!.replace("10.0.0.2", "10.0.0.3"), SEP_A[2]!],
      kernel,
      "IPv4",
    ),
    false,
  );
  assert.equal(heldAsRendered([":KUBE-SEP-NEW - [0:0]"], kernel, "IPv4"), false);
  assert.equal(heldAsRendered(["-A KUBE-EMPTY -j RETURN"], kernel, "IPv4"), false);
  // A rule canonicalRule cannot print is never taken as held.
  const odd = collect("-N KUBE-X\n-A KUBE-X -m multiport --dports 1,2 -j RETURN");
  assert.equal(
    heldAsRendered(["-A KUBE-X -m multiport --dports 1,2 -j RETURN"], odd, "IPv4"),
    false,
  );
});
