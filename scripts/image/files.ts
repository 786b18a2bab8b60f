/** File helpers of the image builder: existence checks and atomic replacement. */

/** Whether `path` exists (any kind of file). */
export async function exists(path: string): Promise<boolean> {
  try {
    await Deno.lstat(path);
    return true;
  } catch (err) {
    if (err instanceof Deno.errors.NotFound) return false;
    throw err;
  }
}

/**
 * Makes `path` by letting `write` fill a temporary sibling, then renaming it over `path`: a
 * reader never sees half a file, and a failed or interrupted build leaves no cache entry.
 */
export async function replaceFile(
  path: string,
  write: (tmp: string) => Promise<void>,
): Promise<void> {
  // The name keeps its ending: mmdebstrap picks its output format by it.
  const slash = path.lastIndexOf("/");
  const tmp = `${path.slice(0, slash + 1)}.tmp-${Deno.pid}-${path.slice(slash + 1)}`;
  try {
    await write(tmp);
    await Deno.rename(tmp, path);
  } catch (err) {
    await Deno.remove(tmp, { recursive: true }).catch(() => {});
    throw err;
  }
}
