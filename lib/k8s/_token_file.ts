/**
 * Token files. client-go's kubeconfig field is `tokenFile` and it re-reads the file (service-
 * account tokens are rotated); client-node 2.0.1 ignores `tokenFile` and reads its own
 * `token-file` spelling once. kubeconfig_entries.ts turns either into a `tokenFile` auth
 * provider, which TokenFileSource serves: re-read once a minute as client-go's cached file token
 * source does, and at once after a 401.
 */
import { type Clock, systemClock } from "../sync/mod.ts";

/** How long a token read from a file is used before the file is read again (client-go's). */
export const TOKEN_FILE_PERIOD_MS = 60_000;

/** Options of TokenFileSource. */
export interface TokenFileSourceOptions {
  readonly clock?: Clock;
  /** Reads the file; defaults to Deno.readTextFile. */
  readonly readFile?: (path: string) => Promise<string>;
  /** Told of each failed re-read, after which the previous token stays in use. */
  readonly onReadError?: (err: unknown) => void;
}

/** The current token of one token file. */
export class TokenFileSource {
  readonly #path: string;
  readonly #clock: Clock;
  readonly #readFile: (path: string) => Promise<string>;
  readonly #onReadError: (err: unknown) => void;
  #token: string | undefined;
  #readAt = 0;

  constructor(path: string, options: TokenFileSourceOptions = {}) {
    this.#path = path;
    this.#clock = options.clock ?? systemClock;
    this.#readFile = options.readFile ?? ((p) => Deno.readTextFile(p));
    this.#onReadError = options.onReadError ?? (() => {});
  }

  /**
   * The token (whitespace trimmed, as client-go does), read again when a minute old; when a
   * re-read fails the previous token is kept and the failure reported (onReadError), and only
   * a first read that fails throws. A failed re-read is tried again on the next call.
   */
  async token(): Promise<string> {
    const now = this.#clock.now();
    if (this.#token !== undefined && now - this.#readAt < TOKEN_FILE_PERIOD_MS) return this.#token;
    try {
      this.#token = (await this.#readFile(this.#path)).trim();
      this.#readAt = now;
    } catch (err) {
      if (this.#token === undefined) throw err;
      this.#onReadError(err);
    }
    return this.#token;
  }

  /** The next token() reads the file again (after a 401: the token may have been rotated). */
  invalidate(): void {
    this.#readAt = -Infinity;
  }
}
