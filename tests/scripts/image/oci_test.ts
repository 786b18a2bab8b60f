/**
 * The OCI writer and reader against each other and against skopeo: a two-layer image made of
 * small folders is written, inspected by skopeo, and unpacked back from its archive.
 */
import assert from "node:assert/strict";
import {
  fileDigest,
  findWhiteout,
  gzipLayer,
  MEDIA_TYPES,
  parseOciIndex,
  parseOciManifest,
  REF_NAME_ANNOTATION,
  unpackOciArchive,
  writeLayerTar,
  writeOciImage,
} from "../../../scripts/image/mod.ts";

const D1 = `sha256:${"1".repeat(64)}`, D2 = `sha256:${"2".repeat(64)}`;

async function withTemp(body: (dir: string) => Promise<void>): Promise<void> {
  const dir = await Deno.makeTempDir({ prefix: "image-test-" });
  try {
    await body(dir);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

Deno.test("parseOciIndex() and parseOciManifest() read digests and refuse what they cannot use", () => {
  const index = {
    manifests: [{ mediaType: MEDIA_TYPES.manifest, digest: D1, size: 1, annotations: { a: "b" } }],
  };
  assert.deepEqual(parseOciIndex(JSON.stringify(index)), { digest: D1, annotations: { a: "b" } });
  assert.throws(() => parseOciIndex(JSON.stringify({ manifests: [] })), /exactly one manifest/);
  const layer = (mediaType: string) => ({ mediaType, digest: D2, size: 1 });
  const manifest = { config: { digest: D1 }, layers: [layer(MEDIA_TYPES.layerGzip)] };
  assert.deepEqual(parseOciManifest(JSON.stringify(manifest)), { config: D1, layers: [D2] });
  const zstd = { ...manifest, layers: [layer("application/vnd.oci.image.layer.v1.tar+zstd")] };
  assert.throws(() => parseOciManifest(JSON.stringify(zstd)), /Unsupported layer 0 media type/);
  const bad = { ...manifest, config: { digest: "sha256:abc" } };
  assert.throws(() => parseOciManifest(JSON.stringify(bad)), /Invalid digest "sha256:abc"/);
});

Deno.test("findWhiteout() finds OCI whiteout entries of a tar listing", () => {
  assert.equal(findWhiteout("./etc/\n./etc/passwd\n"), undefined);
  assert.equal(findWhiteout("./etc/\n./etc/.wh.passwd\n"), "./etc/.wh.passwd");
  assert.equal(findWhiteout(".wh..wh..opq"), ".wh..wh..opq");
});

Deno.test("writeLayerTar() writes the same bytes whatever the files' times and owners", async () => {
  await withTemp(async (dir) => {
    for (const [n, time] of [["a", 1_000], ["b", 2_000_000]] as const) {
      await Deno.mkdir(`${dir}/${n}/etc`, { recursive: true });
      await Deno.writeTextFile(`${dir}/${n}/etc/x`, "same\n");
      await Deno.writeTextFile(`${dir}/${n}/y`, "also\n");
      await Deno.utime(`${dir}/${n}/etc/x`, time, time);
      await Deno.chown(`${dir}/${n}/y`, 1000 + time % 7, 1000);
      await writeLayerTar(`${dir}/${n}`, `${dir}/${n}.tar`);
    }
    assert.equal(
      (await fileDigest(`${dir}/a.tar`)).digest,
      (await fileDigest(`${dir}/b.tar`)).digest,
    );
  });
});

Deno.test("writeOciImage() writes an archive skopeo reads and unpackOciArchive() layers in order", async () => {
  await withTemp(async (dir) => {
    await Deno.mkdir(`${dir}/base/etc`, { recursive: true });
    await Deno.writeTextFile(`${dir}/base/etc/os`, "base\n");
    await Deno.writeTextFile(`${dir}/base/etc/motd`, "from base\n");
    await Deno.mkdir(`${dir}/top/etc`, { recursive: true });
    await Deno.writeTextFile(`${dir}/top/etc/motd`, "from top\n");
    const layers = [];
    for (const name of ["base", "top"]) {
      await writeLayerTar(`${dir}/${name}`, `${dir}/${name}.tar`);
      layers.push(await gzipLayer(`${dir}/${name}.tar`, `${dir}/cache`));
    }
    const reference = "localhost/test-image:1.2.3";
    const written = await writeOciImage({
      layoutDir: `${dir}/oci`,
      archive: `${dir}/image.oci.tar`,
      layers,
      reference,
      config: { architecture: "amd64", entrypoint: ["/bin/true"], env: ["PATH=/bin"] },
    });

    const skopeo = await new Deno.Command("skopeo", {
      args: ["inspect", `oci-archive:${written.archive}`],
    }).output();
    assert.equal(skopeo.code, 0, new TextDecoder().decode(skopeo.stderr));
    const inspected = JSON.parse(new TextDecoder().decode(skopeo.stdout));
    assert.equal(inspected.Digest, written.manifest.digest);
    assert.deepEqual(inspected.Layers, layers.map((l) => l.digest));

    const image = await unpackOciArchive(written.archive, `${dir}/root`);
    assert.equal(image.annotations[REF_NAME_ANNOTATION], reference);
    assert.deepEqual(image.config.Entrypoint, ["/bin/true"]);
    assert.equal(await Deno.readTextFile(`${dir}/root/etc/os`), "base\n");
    assert.equal(await Deno.readTextFile(`${dir}/root/etc/motd`), "from top\n");

    // The same inputs give the same archive, byte for byte.
    const again = await writeOciImage({
      layoutDir: `${dir}/oci2`,
      archive: `${dir}/image2.oci.tar`,
      layers,
      reference,
      config: { architecture: "amd64", entrypoint: ["/bin/true"], env: ["PATH=/bin"] },
    });
    assert.equal(
      (await fileDigest(again.archive)).digest,
      (await fileDigest(written.archive)).digest,
    );
  });
});

Deno.test("unpackOciArchive() refuses a layer whose bytes do not match its digest", async () => {
  await withTemp(async (dir) => {
    await Deno.mkdir(`${dir}/l`);
    await Deno.writeTextFile(`${dir}/l/f`, "x\n");
    await writeLayerTar(`${dir}/l`, `${dir}/l.tar`);
    const layer = await gzipLayer(`${dir}/l.tar`, `${dir}/cache`);
    const written = await writeOciImage({
      layoutDir: `${dir}/oci`,
      archive: `${dir}/image.oci.tar`,
      layers: [layer],
      reference: "localhost/t:1",
      config: { architecture: "amd64", entrypoint: ["/f"], env: [] },
    });
    // Corrupt the blob inside the layout, then archive the layout again by hand.
    const blob = `${written.layoutDir}/blobs/sha256/${layer.digest.slice(7)}`;
    await Deno.remove(blob);
    await Deno.writeTextFile(blob, "not the layer");
    const tar = await new Deno.Command("tar", {
      args: [
        "-c",
        "-f",
        `${dir}/bad.tar`,
        "-C",
        written.layoutDir,
        "oci-layout",
        "index.json",
        "blobs",
      ],
    }).output();
    assert.equal(tar.code, 0);
    await assert.rejects(
      () => unpackOciArchive(`${dir}/bad.tar`, `${dir}/root`),
      new RegExp(`has digest sha256:[0-9a-f]{64}: expected ${layer.digest}`),
    );
  });
});
