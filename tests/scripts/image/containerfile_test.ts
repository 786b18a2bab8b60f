/**
 * The Containerfile (not built here: no engine runs on these machines) installs exactly
 * deploy/image/packages.txt, compiles the program in its own stage and copies nothing from
 * a prebuilt dist/.
 */
import assert from "node:assert/strict";
import { readPackageList } from "../../../scripts/image/mod.ts";

const ROOT = decodeURIComponent(new URL("../../../", import.meta.url).pathname);
const text = Deno.readTextFileSync(`${ROOT}Containerfile`);
/** Instructions with continuation lines joined and comments dropped. */
const instructions = text.replace(/\\\n/g, " ").split("\n").map((l) =>
  l.replace(/\s+/g, " ").trim()
)
  .filter((l) => l !== "" && !l.startsWith("#"));
const stages = instructions.reduce<string[][]>((acc, line) => {
  if (line.startsWith("FROM ")) acc.push([]);
  acc.at(-1)?.push(line);
  return acc;
}, []);
const final = stages.at(-1)!;

Deno.test("Containerfile: the final stage installs exactly deploy/image/packages.txt", async () => {
  assert.ok(final.includes("COPY deploy/image/packages.txt /tmp/packages.txt"));
  const run = final.filter((l) => l.startsWith("RUN ") && l.includes("apt-get install"));
  assert.equal(run.length, 1, `one apt-get install in the final stage: ${run.join(" | ")}`);
  // The package names come only from the file: nothing follows the install options.
  const m =
    /(sed -e '[^']*' \/tmp\/packages\.txt) \| xargs apt-get install -y --no-install-recommends( &&|$)/
      .exec(run[0]!);
  assert.ok(m, `expected "sed ... /tmp/packages.txt | xargs apt-get install ...": ${run[0]}`);
  // What that sed hands to xargs is the list the image builder reads.
  const sed = m[1]!.replace("/tmp/packages.txt", `${ROOT}deploy/image/packages.txt`);
  const out = await new Deno.Command("sh", { args: ["-c", `${sed} | xargs printf '%s\\n'`] })
    .output();
  assert.equal(out.code, 0);
  const words = new TextDecoder().decode(out.stdout).split("\n").filter((w) => w !== "");
  assert.deepEqual(words, await readPackageList());
});

Deno.test("Containerfile: multi-stage, compiles inside the build and copies no dist/ from the context", () => {
  assert.ok(stages.length >= 2, "a build stage and the node image");
  const build = stages[0]!;
  assert.ok(
    build.some((l) => /^RUN deno task compile\b/.test(l)),
    "stage 1 runs deno task compile",
  );
  const copies = instructions.filter((l) => l.startsWith("COPY "));
  const fromContext = copies.filter((l) => !l.startsWith("COPY --from="));
  for (const c of fromContext) assert.doesNotMatch(c, /(^COPY |\s)(\.\/)?dist\//, c);
  assert.ok(
    final.some((l) => /^COPY --from=build \S+ \/usr\/local\/bin\/deno-kube-proxy$/.test(l)),
  );
  assert.ok(final.includes('ENTRYPOINT ["/usr/local/bin/deno-kube-proxy"]'));
  assert.match(final[0]!, /^FROM \S*debian:bookworm-slim$/);
});
