/**
 * The node image's Debian packages: deploy/image/packages.txt, one package per line with `#`
 * comments. `deno task image` and the Containerfile both install exactly this list.
 */

/** Where the list lives, as an absolute path. */
export const IMAGE_PACKAGE_LIST_PATH = decodeURIComponent(
  new URL("../../deploy/image/packages.txt", import.meta.url).pathname,
);

const PACKAGE_NAME_RE = /^[a-z0-9][a-z0-9+.-]+$/;

/**
 * The package names of a list's text, in order: comments (`#` to the end of a line) and blank
 * lines are dropped; a name Debian would not accept or a repeated name throws, naming the line.
 */
export function parsePackageList(text: string, source = "package list"): string[] {
  const names: string[] = [];
  text.split("\n").forEach((raw, i) => {
    const line = raw.replace(/#.*$/, "").trim();
    if (line === "") return;
    if (!PACKAGE_NAME_RE.test(line)) {
      throw new Error(
        `Invalid package "${line}" on line ${
          i + 1
        } of ${source}: expected one Debian package name per line`,
      );
    }
    if (names.includes(line)) {
      throw new Error(`Package "${line}" is listed twice in ${source} (again on line ${i + 1})`);
    }
    names.push(line);
  });
  if (names.length === 0) throw new Error(`No packages in ${source}: expected one name per line`);
  return names;
}

/** The packages of deploy/image/packages.txt (or another list). */
export async function readPackageList(path = IMAGE_PACKAGE_LIST_PATH): Promise<string[]> {
  return parsePackageList(await Deno.readTextFile(path), `"${path}"`);
}
