/** Removing the temporary folders of guests whose host process died without `stop()`. */

/** Prefix of every guest's temporary folder (its console file adds ".console"). */
export const GUEST_DIR_PREFIX = "ipvs-guest-";
/** File in a guest's folder holding the pid of the process that started it. */
export const HOST_PID_FILE = "host.pid";

function alive(pid: number): boolean {
  try {
    Deno.statSync(`/proc/${pid}`);
    return true;
  } catch {
    return false;
  }
}

/** Deletes `parent/ipvs-guest-*` folders (and consoles) whose host pid is gone; returns them. */
export async function removeStaleGuestDirs(parent: string): Promise<string[]> {
  const removed: string[] = [];
  for await (const e of Deno.readDir(parent)) {
    if (!e.isDirectory || !e.name.startsWith(GUEST_DIR_PREFIX)) continue;
    const dir = `${parent}/${e.name}`;
    let pid: number;
    try {
      pid = Number((await Deno.readTextFile(`${dir}/${HOST_PID_FILE}`)).trim());
    } catch {
      continue; // Not ours, or still being set up.
    }
    if (!Number.isInteger(pid) || pid <= 0 || alive(pid)) continue;
    await Deno.remove(dir, { recursive: true }).catch(() => {});
    await Deno.remove(`${dir}.console`).catch(() => {});
    removed.push(dir);
  }
  return removed;
}
