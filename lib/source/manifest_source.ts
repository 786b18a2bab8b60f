/**
 * `--manifests PATH`: a source of cluster state read from YAML/JSON files instead of an API
 * server, watched with inotify so that edits (in place, by atomic rename, or files coming and
 * going in a directory) become watch events.
 */
import { dirname, join, resolve } from "node:path";
import { errorMessage, type Logger, silentLogger } from "../log/mod.ts";
import { sleep, systemClock } from "../sync/mod.ts";
import { OBJECT_KINDS, type ObjectSink, type ObjectSource } from "./events.ts";
import { isManifestFileName, type ManifestObject, parseManifestText } from "./manifest_parse.ts";
import { diffManifestStates, type ManifestState, mergeManifestFiles } from "./manifest_state.ts";

/** A filesystem watcher, as Deno.watchFs returns it. */
export type ManifestWatcher = AsyncIterable<Deno.FsEvent> & { close(): void };

/** Options of createManifestSource. */
export interface ManifestSourceOptions {
  /** A YAML/JSON file, or a directory whose `*.yaml`, `*.yml` and `*.json` files are read. */
  readonly path: string;
  readonly sink: ObjectSink;
  /** Only the Node of this name is delivered, like upstream's field selector. */
  readonly nodeName: string;
  readonly logger?: Logger;
  /** Opens a non-recursive watch; defaults to Deno.watchFs. A seam for tests. */
  readonly watch?: (paths: string[]) => ManifestWatcher;
  /** Bursts of filesystem events within this window cause one rescan. Default 75ms. */
  readonly debounceMs?: number;
  /** How often to look for a vanished directory or retry a failed watch. Default 1000ms. */
  readonly retryMs?: number;
}

/** A manifest source; stopped() lets callers (and tests) wait for a clean shutdown. */
export interface ManifestSource extends ObjectSource {
  /**
   * Resolves once, after the start signal aborted, the watch is closed and no rescan is in
   * flight; no event is delivered after that. Resolves at once if never started.
   */
  stopped(): Promise<void>;
}

/** What the source remembers about one file. */
interface FileRecord {
  /** The last text read, good or bad, so an unchanged file is not parsed (or reported) again. */
  text: string | undefined;
  /** The objects of the last text that parsed. */
  objects: readonly ManifestObject[];
  /** The last read problem reported, so it is logged once. */
  problem: string | undefined;
}

function defaultWatch(paths: string[]): ManifestWatcher {
  return Deno.watchFs(paths, { recursive: false });
}

function closeQuietly(watcher: ManifestWatcher): void {
  try {
    watcher.close();
  } catch {
    // already closed
  }
}

async function statOrUndefined(path: string): Promise<Deno.FileInfo | undefined> {
  try {
    return await Deno.stat(path);
  } catch (err) {
    if (err instanceof Deno.errors.NotFound) return undefined;
    throw err;
  }
}

/**
 * Creates the manifest source. start(signal) checks that the path exists (throwing an Error
 * if not), opens the watch, reads every file, delivers each object as ADDED, then calls
 * onSynced for every kind (ServiceCIDR included), and resolves. The watch keeps running in the
 * background, delivering changes, until `signal` aborts; stopped() waits for it to wind down.
 * When PATH is a file its parent directory is watched, so a rename over the file is seen. A
 * vanished file or directory keeps its last objects until it comes back.
 */
export function createManifestSource(options: ManifestSourceOptions): ManifestSource {
  const logger = options.logger ?? silentLogger;
  const watch = options.watch ?? defaultWatch;
  const debounceMs = options.debounceMs ?? 75;
  const retryMs = options.retryMs ?? 1000;
  const path = resolve(options.path);
  const files = new Map<string, FileRecord>();
  let delivered: ManifestState = new Map();
  let reportedDuplicates = new Set<string>();
  let started = false;
  let loop: Promise<void> = Promise.resolve();
  let running: Promise<void> | undefined;

  /** Reads one file into its record; returns false when the file does not exist. */
  async function readFile(file: string): Promise<boolean> {
    const record = files.get(file) ?? { text: undefined, objects: [], problem: undefined };
    files.set(file, record);
    let text: string;
    try {
      text = await Deno.readTextFile(file);
    } catch (err) {
      if (err instanceof Deno.errors.NotFound) return false;
      const problem = errorMessage(err);
      if (problem !== record.problem) {
        logger.error("Cannot read manifest file; keeping its last good objects", {
          file,
          reason: problem,
        });
      }
      record.problem = problem;
      return true;
    }
    record.problem = undefined;
    if (text === record.text) return true;
    record.text = text;
    const parsed = parseManifestText(text, file);
    if (parsed.errors.length > 0) {
      logger.error("Cannot parse manifest file; keeping its last good objects", {
        file,
        reason: parsed.errors.join("; "),
      });
      return true;
    }
    for (const reason of parsed.skipped) logger.warn("Skipping manifest object", { file, reason });
    for (const reason of parsed.ignored) {
      logger.debug(2, "Ignoring manifest object", { file, reason });
    }
    record.objects = parsed.objects;
    return true;
  }

  /** The manifest files now in directory `dir`. */
  async function listDirectory(dir: string): Promise<string[]> {
    const found: string[] = [];
    for await (const entry of Deno.readDir(dir)) {
      if (!isManifestFileName(entry.name) || entry.isDirectory) continue;
      const file = join(dir, entry.name);
      if (entry.isSymlink && !(await statOrUndefined(file))?.isFile) continue;
      found.push(file);
    }
    return found;
  }

  return {
    start(signal: AbortSignal): Promise<void> {
      if (started) return Promise.reject(new Error("The manifest source was already started"));
      started = true;
      return run(signal);
    },
    async stopped(): Promise<void> {
      await loop;
      while (running) await running;
    },
  };

  async function run(signal: AbortSignal): Promise<void> {
    if (signal.aborted) return;
    let info: Deno.FileInfo | undefined;
    try {
      info = await statOrUndefined(path);
    } catch (err) {
      throw new Error(`Cannot read --manifests "${path}": ${errorMessage(err)}`);
    }
    if (!info) {
      throw new Error(
        `Manifest path "${path}" does not exist: expected a YAML or JSON file, or a directory of them`,
      );
    }
    const directoryMode = info.isDirectory;
    const root = directoryMode ? path : dirname(path);
    let current: ManifestWatcher | undefined;
    let watchedIno: number | null | undefined;
    let rootMissing = false;
    let fileMissing = false;
    let timer: ReturnType<typeof setTimeout> | undefined;
    let again = false;

    /** Rereads the files, then delivers the difference. Never throws. */
    async function scanOnce(): Promise<void> {
      try {
        const rootInfo = await statOrUndefined(root);
        if (!rootInfo) {
          if (!rootMissing) {
            logger.warn("Manifest directory disappeared; keeping the last objects", { path: root });
          }
          rootMissing = true;
          if (current) closeQuietly(current); // the watch loop waits for the directory to return
          return;
        }
        if (rootMissing) logger.info("Manifest directory is back", { path: root });
        rootMissing = false;
        if (watchedIno === undefined) watchedIno = rootInfo.ino;
        else if (watchedIno !== rootInfo.ino && current) {
          logger.info("Manifest directory was replaced; watching the new one", { path: root });
          closeQuietly(current);
        }
        if (directoryMode) {
          const present = new Set(await listDirectory(root));
          for (const file of files.keys()) if (!present.has(file)) files.delete(file);
          for (const file of [...present].sort()) {
            if (!(await readFile(file))) files.delete(file);
          }
        } else {
          const exists = await readFile(path);
          if (!exists && !fileMissing) {
            logger.warn("Manifest file disappeared; keeping its last objects", { file: path });
          }
          if (exists && fileMissing) logger.info("Manifest file is back", { file: path });
          fileMissing = !exists;
        }
        deliver(signal);
        logger.debug(5, "Rescanned manifests", { path, files: files.size });
      } catch (err) {
        logger.error("Cannot rescan manifests; keeping the last objects", {
          path,
          reason: errorMessage(err),
        });
      }
    }

    /** Runs scans one at a time; a request during a scan causes one more scan after it. */
    function runScans(): Promise<void> {
      if (running) {
        again = true;
        return running;
      }
      running = (async () => {
        try {
          do {
            again = false;
            await scanOnce();
          } while (again && !signal.aborted);
        } finally {
          running = undefined;
        }
      })();
      return running;
    }

    function schedule(): void {
      if (signal.aborted || timer !== undefined) return;
      timer = setTimeout(() => {
        timer = undefined;
        void runScans();
      }, debounceMs);
    }

    signal.addEventListener("abort", () => {
      if (timer !== undefined) clearTimeout(timer);
      timer = undefined;
      if (current) closeQuietly(current);
    }, { once: true });

    async function watchLoop(): Promise<void> {
      let first = true;
      while (!signal.aborted) {
        try {
          current = watch([root]);
        } catch (err) {
          logger.error("Cannot watch manifests; retrying", {
            path: root,
            reason: errorMessage(err),
          });
          await sleep(systemClock, retryMs, signal);
          continue;
        }
        const watcher = current;
        watchedIno = undefined;
        if (!first) schedule(); // catch up with changes made while nothing watched
        first = false;
        try {
          for await (const _event of watcher) schedule();
        } catch (err) {
          if (!signal.aborted) {
            logger.error("Manifest watch failed", { path: root, reason: errorMessage(err) });
          }
        } finally {
          closeQuietly(watcher);
          if (current === watcher) current = undefined;
        }
        await sleep(systemClock, retryMs, signal);
        while (!signal.aborted && !(await statOrUndefined(root).catch(() => undefined))) {
          await sleep(systemClock, retryMs, signal);
        }
      }
    }

    // The watch opens synchronously here, before the first read, so no change is missed.
    loop = watchLoop();
    await runScans();
    if (signal.aborted) return;
    for (const kind of OBJECT_KINDS) options.sink.onSynced(kind);
    logger.info("Loaded manifests", { path, objects: delivered.size, files: files.size });
  }

  /** Merges the files, reports new duplicates and sends the sink what changed. */
  function deliver(signal: AbortSignal): void {
    const merged = mergeManifestFiles(
      [...files].map(([file, record]) => ({ path: file, objects: record.objects })),
      options.nodeName,
    );
    const duplicates = new Set<string>();
    for (const dup of merged.duplicates) {
      const id = `${dup.key} ${dup.winner} ${dup.losers.join(",")}`;
      duplicates.add(id);
      if (reportedDuplicates.has(id)) continue;
      logger.warn("Object defined in several manifest files; the last file wins", {
        object: dup.key,
        file: dup.winner,
        ignored: dup.losers,
      });
    }
    reportedDuplicates = duplicates;
    if (signal.aborted) return;
    const events = diffManifestStates(delivered, merged.state);
    delivered = merged.state;
    for (const event of events) {
      logger.debug(4, "Manifest event", {
        type: event.type,
        kind: event.kind,
        name: event.object.metadata?.name,
      });
      try {
        options.sink.onEvent(event);
      } catch (err) {
        logger.error("Manifest event handler failed", { reason: errorMessage(err) });
      }
    }
  }
}
