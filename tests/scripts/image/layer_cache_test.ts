import assert from "node:assert/strict";
import { gzipLayer, pruneLayerCache, writeLayerTar } from "../../../scripts/image/mod.ts";

Deno.test("gzipLayer() compresses once per content; pruneLayerCache() drops only old unused layers", async () => {
  const dir = await Deno.makeTempDir({ prefix: "image-layers-" });
  try {
    const layers = [];
    for (const name of ["a", "b"]) {
      await Deno.mkdir(`${dir}/${name}`);
      await Deno.writeTextFile(`${dir}/${name}/f`, `${name}\n`);
      await writeLayerTar(`${dir}/${name}`, `${dir}/${name}.tar`);
      layers.push(await gzipLayer(`${dir}/${name}.tar`, `${dir}/cache`));
    }
    const [a, b] = layers as [typeof layers[0], typeof layers[0]];
    const again = await gzipLayer(`${dir}/a.tar`, `${dir}/cache`);
    assert.deepEqual(again, a);
    assert.notEqual(a.digest, b.digest);
    assert.notEqual(a.digest, a.diffId, "the blob is compressed");

    // Within the hour nothing goes; later only what this build did not use.
    assert.deepEqual(await pruneLayerCache(`${dir}/cache`, [a]), []);
    const later = Date.now() + 2 * 3_600_000;
    assert.deepEqual(await pruneLayerCache(`${dir}/cache`, [a], 3_600_000, later), [b.path]);
    await Deno.stat(a.path);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
