/**
 * `--manifests PATH`: a source of cluster state read from YAML/JSON files instead of an API
 * server, watched with inotify so that edits (in place, by atomic rename, or files coming and
 * going in a directory) become watch events.
 */
import { dirname, resolve } from "node:path";
import { errorMessage, type Logger, silentLogger } from "../log/mod.ts";
import { sleep, systemClock } from "../sync/mod.ts";
import { OBJECT_KINDS, type ObjectSink, type ObjectSource } from "./events.ts";
import { diffManifestStates, type ManifestState, mergeManifestFiles } from "./_manifest_state.ts";
import { listManifestDirectory, ManifestFiles, statOrUndefined } from "./_manifest_files.ts";

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

/**
 * Creates the manifest source. start(signal) checks that the path exists (throwing an Error
 * if not), opens the watch, reads every file, delivers each object as ADDED, then calls
 * onSynced for every kind (ServiceCIDR included), and resolves. The watch keeps running in the
 * background, delivering changes, until `signal` aborts; stopped() waits for it to wind down.
 * When PATH is a file its parent directory is watched, so a rename over the file is seen. A
 * vanished file or directory keeps its last objects until it comes back.
 */
export function createManifestSource(options: ManifestSourceOptions): ManifestSource {
  return new ManifestFileSource(options);
}

/** The `--manifests` source: the files read, what was delivered, and the watch over them. */
class ManifestFileSource implements ManifestSource {
  readonly #options: ManifestSourceOptions;
  readonly #logger: Logger;
  readonly #watch: (paths: string[]) => ManifestWatcher;
  readonly #debounceMs: number;
  readonly #retryMs: number;
  /** The --manifests path, absolute. */
  readonly #path: string;
  readonly #files: ManifestFiles;
  /** The objects the sink has been given, by kind and key. */
  #delivered: ManifestState = new Map();
  /** The duplicate definitions already warned about, so each is logged once. */
  #reportedDuplicates = new Set<string>();
  #started = false;
  /** The watch loop, once started. */
  #loop: Promise<void> = Promise.resolve();
  /** The scans in flight, if any (see runScans). */
  #running: Promise<void> | undefined;
  /** A scan was asked for while one ran: one more follows it. */
  #again = false;
  /** The directory watched: the path itself, or a file's parent (set by start). */
  #root = "";
  /** The path is a directory whose manifest files are all read (set by start). */
  #directoryMode = false;
  /** The watch now open. */
  #current: ManifestWatcher | undefined;
  /** The watched directory's inode, to notice it was replaced; undefined until a scan. */
  #watchedIno: number | null | undefined;
  #rootMissing = false;
  #fileMissing = false;
  /** The debounce timer of the next scan. */
  #timer: ReturnType<typeof setTimeout> | undefined;

  constructor(options: ManifestSourceOptions) {
    this.#options = options;
    this.#logger = options.logger ?? silentLogger;
    this.#watch = options.watch ?? defaultWatch;
    this.#debounceMs = options.debounceMs ?? 75;
    this.#retryMs = options.retryMs ?? 1000;
    this.#path = resolve(options.path);
    this.#files = new ManifestFiles(this.#logger);
  }

  start(signal: AbortSignal): Promise<void> {
    if (this.#started) return Promise.reject(new Error("The manifest source was already started"));
    this.#started = true;
    return this.#run(signal);
  }

  async stopped(): Promise<void> {
    await this.#loop;
    while (this.#running) await this.#running;
  }

  async #run(signal: AbortSignal): Promise<void> {
    if (signal.aborted) return;
    const path = this.#path;
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
    this.#directoryMode = info.isDirectory;
    this.#root = info.isDirectory ? path : dirname(path);
    signal.addEventListener("abort", () => {
      if (this.#timer !== undefined) clearTimeout(this.#timer);
      this.#timer = undefined;
      if (this.#current) closeQuietly(this.#current);
    }, { once: true });
    // The watch opens synchronously here, before the first read, so no change is missed.
    this.#loop = this.#watchLoop(signal);
    await this.#runScans(signal);
    if (signal.aborted) return;
    for (const kind of OBJECT_KINDS) this.#options.sink.onSynced(kind);
    this.#logger.info("Loaded manifests", {
      path,
      objects: this.#delivered.size,
      files: this.#files.size,
    });
  }

  /** Keeps a watch open on the root, asking for a scan on each event, until `signal` aborts. */
  async #watchLoop(signal: AbortSignal): Promise<void> {
    const root = this.#root;
    let first = true;
    while (!signal.aborted) {
      let watcher: ManifestWatcher;
      try {
        watcher = this.#current = this.#watch([root]);
      } catch (err) {
        this.#logger.error("Cannot watch manifests; retrying", {
          path: root,
          reason: errorMessage(err),
        });
        await sleep(systemClock, this.#retryMs, signal);
        continue;
      }
      this.#watchedIno = undefined;
      if (!first) this.#schedule(signal); // catch up with changes made while nothing watched
      first = false;
      try {
        for await (const _event of watcher) this.#schedule(signal);
      } catch (err) {
        if (!signal.aborted) {
          this.#logger.error("Manifest watch failed", { path: root, reason: errorMessage(err) });
        }
      } finally {
        closeQuietly(watcher);
        if (this.#current === watcher) this.#current = undefined;
      }
      await sleep(systemClock, this.#retryMs, signal);
      while (!signal.aborted && !(await statOrUndefined(root).catch(() => undefined))) {
        await sleep(systemClock, this.#retryMs, signal);
      }
    }
  }

  /** Asks for a scan once a burst of events has passed (the debounce window). */
  #schedule(signal: AbortSignal): void {
    if (signal.aborted || this.#timer !== undefined) return;
    this.#timer = setTimeout(() => {
      this.#timer = undefined;
      void this.#runScans(signal);
    }, this.#debounceMs);
  }

  /** Runs scans one at a time; a request during a scan causes one more scan after it. */
  #runScans(signal: AbortSignal): Promise<void> {
    if (this.#running) {
      this.#again = true;
      return this.#running;
    }
    this.#running = (async () => {
      try {
        do {
          this.#again = false;
          await this.#scanOnce(signal);
        } while (this.#again && !signal.aborted);
      } finally {
        this.#running = undefined;
      }
    })();
    return this.#running;
  }

  /** Rereads the files, then delivers the difference. Never throws. */
  async #scanOnce(signal: AbortSignal): Promise<void> {
    const logger = this.#logger;
    const root = this.#root;
    try {
      const rootInfo = await statOrUndefined(root);
      if (!rootInfo) {
        if (!this.#rootMissing) {
          logger.warn("Manifest directory disappeared; keeping the last objects", { path: root });
        }
        this.#rootMissing = true;
        // The watch loop waits for the directory to return.
        if (this.#current) closeQuietly(this.#current);
        return;
      }
      if (this.#rootMissing) logger.info("Manifest directory is back", { path: root });
      this.#rootMissing = false;
      if (this.#watchedIno === undefined) this.#watchedIno = rootInfo.ino;
      else if (this.#watchedIno !== rootInfo.ino && this.#current) {
        logger.info("Manifest directory was replaced; watching the new one", { path: root });
        closeQuietly(this.#current);
      }
      if (this.#directoryMode) await this.#readDirectory();
      else await this.#readFile();
      this.#deliver(signal);
      logger.debug(5, "Rescanned manifests", { path: this.#path, files: this.#files.size });
    } catch (err) {
      logger.error("Cannot rescan manifests; keeping the last objects", {
        path: this.#path,
        reason: errorMessage(err),
      });
    }
  }

  /** Reads the root directory's manifest files; files gone from it are forgotten. */
  async #readDirectory(): Promise<void> {
    const files = this.#files;
    const present = new Set(await listManifestDirectory(this.#root));
    for (const file of files.paths()) if (!present.has(file)) files.delete(file);
    for (const file of [...present].sort()) {
      if (!(await files.read(file))) files.delete(file);
    }
  }

  /** Reads the one manifest file; a missing file keeps its last objects. */
  async #readFile(): Promise<void> {
    const path = this.#path;
    const exists = await this.#files.read(path);
    if (!exists && !this.#fileMissing) {
      this.#logger.warn("Manifest file disappeared; keeping its last objects", { file: path });
    }
    if (exists && this.#fileMissing) this.#logger.info("Manifest file is back", { file: path });
    this.#fileMissing = !exists;
  }

  /** Merges the files, reports new duplicates and sends the sink what changed. */
  #deliver(signal: AbortSignal): void {
    const logger = this.#logger;
    const merged = mergeManifestFiles(this.#files.objects(), this.#options.nodeName);
    const duplicates = new Set<string>();
    for (const dup of merged.duplicates) {
      const id = `${dup.key} ${dup.winner} ${dup.losers.join(",")}`;
      duplicates.add(id);
      if (this.#reportedDuplicates.has(id)) continue;
      logger.warn("Object defined in several manifest files; the last file wins", {
        object: dup.key,
        file: dup.winner,
        ignored: dup.losers,
      });
    }
    this.#reportedDuplicates = duplicates;
    if (signal.aborted) return;
    const events = diffManifestStates(this.#delivered, merged.state);
    this.#delivered = merged.state;
    for (const event of events) {
      logger.debug(4, "Manifest event", {
        type: event.type,
        kind: event.kind,
        name: event.object.metadata?.name,
      });
      try {
        this.#options.sink.onEvent(event);
      } catch (err) {
        logger.error("Manifest event handler failed", { reason: errorMessage(err) });
      }
    }
  }
}
