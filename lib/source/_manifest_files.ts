/**
 * The manifest files a source has read: each file's last text and objects, read again only when
 * its text changed, and the listing of a directory's manifest files.
 */
import { join } from "node:path";
import { errorMessage, type Logger } from "../log/mod.ts";
import { isManifestFileName, type ManifestObject, parseManifestText } from "./_manifest_parse.ts";

/** What the source remembers about one file. */
interface FileRecord {
  /** The last text read, good or bad, so an unchanged file is not parsed (or reported) again. */
  text: string | undefined;
  /** The objects of the last text that parsed. */
  objects: readonly ManifestObject[];
  /** The last read problem reported, so it is logged once. */
  problem: string | undefined;
}

/** The file's info, or undefined when it does not exist. */
export async function statOrUndefined(path: string): Promise<Deno.FileInfo | undefined> {
  try {
    return await Deno.stat(path);
  } catch (err) {
    if (err instanceof Deno.errors.NotFound) return undefined;
    throw err;
  }
}

/** The manifest files read so far, by path, with their last good objects. */
export class ManifestFiles {
  readonly #logger: Logger;
  readonly #files = new Map<string, FileRecord>();

  constructor(logger: Logger) {
    this.#logger = logger;
  }

  /** How many files are known. */
  get size(): number {
    return this.#files.size;
  }

  /** The known files' paths. */
  paths(): IterableIterator<string> {
    return this.#files.keys();
  }

  /** Forgets one file and its objects. */
  delete(file: string): void {
    this.#files.delete(file);
  }

  /** Each known file with its last good objects, in the order they were first read. */
  objects(): { path: string; objects: readonly ManifestObject[] }[] {
    return [...this.#files].map(([path, record]) => ({ path, objects: record.objects }));
  }

  /** Reads one file into its record; returns false when the file does not exist. */
  async read(file: string): Promise<boolean> {
    const logger = this.#logger;
    const record = this.#files.get(file) ?? { text: undefined, objects: [], problem: undefined };
    this.#files.set(file, record);
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
}

/** The manifest files now in directory `dir`. */
export async function listManifestDirectory(dir: string): Promise<string[]> {
  const found: string[] = [];
  for await (const entry of Deno.readDir(dir)) {
    if (!isManifestFileName(entry.name) || entry.isDirectory) continue;
    const file = join(dir, entry.name);
    if (entry.isSymlink && !(await statOrUndefined(file))?.isFile) continue;
    found.push(file);
  }
  return found;
}
