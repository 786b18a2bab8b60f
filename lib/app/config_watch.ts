/**
 * Watches the `--config` file: when it changes on disk the process exits (code 2) so that its
 * supervisor restarts it with the new file, as upstream kube-proxy does. The folder is watched,
 * not the file, so that a file replaced by rename (editors, config tools, the ConfigMap
 * `..data` symlink swap) is seen too; only a real change of content, or the file going away,
 * counts.
 */
import type { Logger } from "../log/mod.ts";

/** What watchConfigFile needs; the file system pieces are seams for tests. */
export interface ConfigWatchOptions {
  readonly path: string;
  readonly signal: AbortSignal;
  readonly logger: Logger;
  /** Defaults to Deno.readTextFile (follows symlinks). */
  readonly readTextFile?: (path: string) => Promise<string>;
  /** Defaults to a non-recursive Deno.watchFs. */
  readonly watch?: (dir: string) => AsyncIterable<unknown> & { close(): void };
  /** Settling time after an event, and how long a missing file may stay missing (300 ms). */
  readonly graceMs?: number;
  /** Wait before watching again after the watch failed (5 s). */
  readonly retryMs?: number;
  /** Told of each failure of the watch (besides the log), e.g. to count it. */
  readonly onError?: (err: unknown) => void;
}

function parentDir(path: string): string {
  const i = path.lastIndexOf("/");
  if (i < 0) return ".";
  return i === 0 ? "/" : path.slice(0, i);
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * Resolves with a message once the file's content differs from what it was when the watch
 * started, or the file is gone; resolves null when `signal` aborts first (or the folder cannot
 * be watched at start, which is logged). Never rejects: a watch that fails later is logged,
 * reported to `onError` and started again, still comparing with the content first read.
 */
export async function watchConfigFile(options: ConfigWatchOptions): Promise<string | null> {
  const { path, signal, logger } = options;
  const read = options.readTextFile ?? ((p: string) => Deno.readTextFile(p));
  const graceMs = options.graceMs ?? 300;
  const retryMs = options.retryMs ?? 5_000;
  const watch = options.watch ?? ((dir: string) => Deno.watchFs(dir, { recursive: false }));
  if (signal.aborted) return null;
  let watcher: AsyncIterable<unknown> & { close(): void };
  let original: string;
  try {
    watcher = watch(parentDir(path));
    original = await read(path);
  } catch (err) {
    logger.warn("Cannot watch the config file for changes", { path, err });
    return null;
  }

  /**
   * The content once writes have settled (a rewrite truncates before it writes), or null when
   * the file stays missing for a grace period (a remove-and-recreate is not a removal).
   */
  const current = async (): Promise<string | null> => {
    for (let tries = 0; tries < 2; tries++) {
      await sleep(graceMs);
      try {
        return await read(path);
      } catch (err) {
        if (!(err instanceof Deno.errors.NotFound)) throw err;
      }
    }
    return null;
  };

  /** What the file says now against the original: a message, or undefined when unchanged. */
  const verdict = (now: string | null): string | undefined => {
    if (now === null) {
      return `Config file "${path}" was removed: exiting so that the supervisor restarts ` +
        `the proxy`;
    }
    if (now !== original) {
      return `Config file "${path}" changed on disk: exiting so that the supervisor ` +
        `restarts the proxy with the new file`;
    }
    return undefined;
  };

  /** Follows one watcher until a verdict, an abort (null) or its failure (thrown). */
  const follow = async (w: typeof watcher): Promise<string | null> => {
    const stop = () => w.close();
    signal.addEventListener("abort", stop, { once: true });
    try {
      for await (const _ of w) {
        if (signal.aborted) return null;
        let now: string | null;
        try {
          now = await current();
        } catch (err) {
          logger.warn("Cannot read the config file", { path, err });
          continue;
        }
        if (signal.aborted) return null;
        const said = verdict(now);
        if (said !== undefined) return said;
      }
      return null;
    } finally {
      signal.removeEventListener("abort", stop);
      try {
        w.close();
      } catch {
        // Already closed.
      }
    }
  };

  while (true) {
    try {
      return await follow(watcher);
    } catch (err) {
      if (signal.aborted) return null;
      logger.error("Watching the config file failed; watching it again", {
        path,
        retryInMs: retryMs,
        err,
      });
      options.onError?.(err);
    }
    // Watch again; a change made meanwhile is still seen against the original content.
    while (true) {
      await abortableSleep(retryMs, signal);
      if (signal.aborted) return null;
      try {
        watcher = watch(parentDir(path));
        break;
      } catch (err) {
        logger.error("Watching the config file failed; watching it again", {
          path,
          retryInMs: retryMs,
          err,
        });
        options.onError?.(err);
      }
    }
    try {
      const said = verdict(await current());
      if (said !== undefined) {
        watcher.close();
        return said;
      }
    } catch (err) {
      logger.warn("Cannot read the config file", { path, err });
    }
  }
}

function abortableSleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((done) => {
    if (signal.aborted) return done();
    const timer = setTimeout(() => {
      signal.removeEventListener("abort", onAbort);
      done();
    }, ms);
    const onAbort = () => {
      clearTimeout(timer);
      done();
    };
    signal.addEventListener("abort", onAbort, { once: true });
  });
}
