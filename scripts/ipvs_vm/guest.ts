/**
 * A booted IPVS test guest: one qemu boot serves many commands, each sent through the
 * read-write 9p folder and run by the guest's agent with the host's programs and files.
 */
import { requireCommands } from "../netns/mod.ts";
import { FileTail } from "./file_tail.ts";
import { agentScript, GUEST_LAYOUT } from "./guest_init.ts";
import {
  DEFAULT_COMMAND_TIMEOUT_MS,
  type GuestCommand,
  type GuestOutput,
  KILL_GRACE_SECONDS,
  renderRequestScript,
} from "./guest_request.ts";
import { type GuestImage, prepareGuestImage, type PrepareOptions } from "./prepare.ts";
import { qemuArgs } from "./qemu_args.ts";
import { GUEST_DIR_PREFIX, HOST_PID_FILE, removeStaleGuestDirs } from "./stale_dirs.ts";

/** Options of `startIpvsGuest`; every field has a working default. */
export interface IpvsGuestOptions {
  /** Boot files; default: built or reused by `prepareGuestImage(prepare)`. */
  readonly image?: GuestImage;
  readonly prepare?: PrepareOptions;
  /** The qemu binary; default "qemu-system-x86_64". */
  readonly qemu?: string;
  /**
   * Command qemu is started under; default util-linux's `setpriv --pdeathsig KILL`, so qemu
   * dies with the test process even when that is killed before it can call `stop()`.
   */
  readonly qemuWrapper?: readonly string[];
  readonly memoryMiB?: number;
  /** Launch to agent ready; default 180 s (a busy 2-core machine needs ~40 s). */
  readonly bootTimeoutMs?: number;
  /** Environment of every command; default PATH and the host's HOME and DENO_DIR. */
  readonly baseEnv?: Readonly<Record<string, string>>;
  /** How often the host looks for an answer; default 20 ms. */
  readonly hostPollMs?: number;
  /** How often the agent looks for a request; default 0.05 s. */
  readonly agentPollSeconds?: number;
  /** Parent of the guest's temporary folder; default $TMPDIR or /tmp. */
  readonly tmpDir?: string;
  /** Host folder shared read-only as the guest's root; default "/". */
  readonly rootDir?: string;
  /** More read-only shares (e.g. layers named in the init's `extraLowerTags`); default none. */
  readonly extraShares?: readonly { readonly tag: string; readonly path: string }[];
  /** Appended to the kernel command line; default none. */
  readonly kernelArgs?: readonly string[];
  /** How the agent runs (see `agentScript`); default "pid1". */
  readonly agentVariant?: "pid1" | "service";
  /** After asking the guest to power off, how long before qemu is killed; default 10 s. */
  readonly stopGraceMs?: number;
  /** What error messages call the guest; default "IPVS guest". */
  readonly label?: string;
}

/** How to follow one command. */
export interface GuestRunOptions {
  /** Called with output as the command writes it (every host poll), e.g. to forward it live. */
  readonly onOutput?: (stream: "stdout" | "stderr", text: string) => void;
}

/** A running guest; always `stop()` it in a `finally`. */
export interface IpvsGuest {
  /** Milliseconds from launching qemu to the agent being ready. */
  readonly bootMs: number;
  /** Runs one command in the guest (one at a time; calls queue); never throws on non-zero exit. */
  run(command: GuestCommand, opts?: GuestRunOptions): Promise<GuestOutput>;
  /** The guest's serial console so far (kernel messages, init errors). */
  console(): Promise<string>;
  /** Powers the guest off (killing qemu if it lingers) and removes the temporary folder. */
  stop(): Promise<void>;
}

/** The environment commands get unless told otherwise. */
export function defaultGuestEnv(): Record<string, string> {
  // The host's HOME, so Deno finds the host's module cache (the guest has no network).
  const env: Record<string, string> = {
    PATH: "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
    HOME: Deno.env.get("HOME") ?? "/root",
  };
  const denoDir = Deno.env.get("DENO_DIR");
  if (denoDir !== undefined) env.DENO_DIR = denoDir;
  return env;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Whether the agent has finished writing `path` (it ends every file it signals with "\n"). */
async function complete(path: string): Promise<boolean> {
  try {
    return (await Deno.readTextFile(path)).endsWith("\n");
  } catch (err) {
    if (err instanceof Deno.errors.NotFound) return false;
    throw err;
  }
}

async function readTail(path: string, chars = 4000): Promise<string> {
  try {
    return (await Deno.readTextFile(path)).slice(-chars);
  } catch {
    return "";
  }
}

/** Boots the guest and waits until its agent serves requests; throws (qemu killed) on failure. */
export async function startIpvsGuest(options: IpvsGuestOptions = {}): Promise<IpvsGuest> {
  const qemu = options.qemu ?? "qemu-system-x86_64";
  const wrapper = options.qemuWrapper ?? ["setpriv", "--pdeathsig", "KILL"];
  // Fail before any download or boot when qemu (Debian: qemu-system-x86) is not installed.
  requireCommands([qemu, ...wrapper.slice(0, 1)].filter((c) => !c.includes("/")));
  const image = options.image ?? await prepareGuestImage(options.prepare);
  const tmpDir = options.tmpDir ?? Deno.env.get("TMPDIR") ?? "/tmp";
  await removeStaleGuestDirs(tmpDir);
  const ioDir = await Deno.makeTempDir({ prefix: GUEST_DIR_PREFIX, dir: tmpDir });
  await Deno.writeTextFile(`${ioDir}/${HOST_PID_FILE}`, `${Deno.pid}\n`);
  const consoleFile = `${ioDir}.console`;
  const agent = agentScript({
    pollSeconds: options.agentPollSeconds ?? 0.05,
    ...(options.agentVariant !== undefined ? { variant: options.agentVariant } : {}),
  });
  await Deno.writeTextFile(`${ioDir}/${GUEST_LAYOUT.agentFile}`, agent);
  const started = Date.now();
  let child: Deno.ChildProcess;
  try {
    child = new Deno.Command(wrapper[0] ?? qemu, {
      args: [
        ...wrapper.slice(1),
        ...(wrapper.length > 0 ? [qemu] : []),
        ...qemuArgs({
          kernel: image.kernel,
          initrd: image.initrd,
          ioDir,
          consoleFile,
          ...(options.memoryMiB !== undefined ? { memoryMiB: options.memoryMiB } : {}),
          ...(options.rootDir !== undefined ? { rootDir: options.rootDir } : {}),
          ...(options.extraShares !== undefined ? { extraShares: options.extraShares } : {}),
          ...(options.kernelArgs !== undefined ? { kernelArgs: options.kernelArgs } : {}),
        }),
      ],
      stdin: "null",
      stdout: "piped",
      stderr: "piped",
    }).spawn();
  } catch (err) {
    await Deno.remove(ioDir, { recursive: true }).catch(() => {});
    if (err instanceof Deno.errors.NotFound) {
      throw new Error(
        `${
          options.label ?? "IPVS guest"
        } needs "${qemu}" (Debian package qemu-system-x86): run scripts/install_test_deps.sh`,
      );
    }
    throw err;
  }
  const guest = new QemuGuest(child, ioDir, consoleFile, options);
  try {
    await guest.waitReady(options.bootTimeoutMs ?? 180_000);
  } catch (err) {
    await guest.stop();
    throw err;
  }
  guest.bootMs = Date.now() - started;
  return guest;
}

class QemuGuest implements IpvsGuest {
  bootMs = 0;
  private next = 0;
  private queue: Promise<unknown> = Promise.resolve();
  private exited = false;
  private qemuOutput = "";
  private readonly status: Promise<Deno.CommandStatus>;
  private readonly baseEnv: Readonly<Record<string, string>>;
  private readonly hostPollMs: number;
  private readonly stopGraceMs: number;
  private readonly label: string;

  constructor(
    private readonly child: Deno.ChildProcess,
    private readonly ioDir: string,
    private readonly consoleFile: string,
    options: IpvsGuestOptions,
  ) {
    this.baseEnv = options.baseEnv ?? defaultGuestEnv();
    this.hostPollMs = options.hostPollMs ?? 20;
    this.stopGraceMs = options.stopGraceMs ?? 10_000;
    this.label = options.label ?? "IPVS guest";
    const decoder = new TextDecoder();
    const pump = async (s: ReadableStream<Uint8Array>) => {
      for await (const c of s) this.qemuOutput += decoder.decode(c, { stream: true });
    };
    const pumps = Promise.all([pump(child.stdout), pump(child.stderr)]).catch(() => {});
    this.status = child.status.then(async (s) => {
      await pumps;
      this.exited = true;
      return s;
    });
  }

  private async failure(what: string): Promise<Error> {
    const qemu = this.qemuOutput.trim();
    return new Error(
      `${this.label} ${what}${qemu ? `\nqemu says: ${qemu}` : ""}\nconsole tail:\n${await readTail(
        this.consoleFile,
      )}`,
    );
  }

  /** Polls until the agent completed `path`; throws if qemu exits or the deadline passes. */
  private async waitForFile(
    path: string,
    deadline: number,
    what: string,
    onPoll: () => Promise<void> = async () => {},
  ): Promise<void> {
    while (!await complete(path)) {
      await onPoll();
      if (this.exited) throw await this.failure(`exited while ${what}`);
      if (Date.now() > deadline) throw await this.failure(`timed out ${what}`);
      await sleep(this.hostPollMs);
    }
  }

  async waitReady(timeoutMs: number): Promise<void> {
    const ready = `${this.ioDir}/${GUEST_LAYOUT.readyFile}`;
    await this.waitForFile(ready, Date.now() + timeoutMs, `booting (limit ${timeoutMs} ms)`);
  }

  run(command: GuestCommand, opts: GuestRunOptions = {}): Promise<GuestOutput> {
    const result = this.queue.then(() => this.runNow(command, opts));
    this.queue = result.catch(() => {});
    return result;
  }

  private async runNow(command: GuestCommand, opts: GuestRunOptions): Promise<GuestOutput> {
    if (this.exited) throw await this.failure(`is not running (command "${command.cmd}")`);
    const n = this.next++;
    const req = `${this.ioDir}/req`;
    const out = `${this.ioDir}/out`;
    let stdinPath: string | null = null;
    if (command.stdin !== undefined) {
      stdinPath = `${GUEST_LAYOUT.ioMount}/req/${n}.stdin`;
      await Deno.writeTextFile(`${req}/${n}.stdin`, command.stdin);
    }
    const script = renderRequestScript(command, this.baseEnv, stdinPath);
    await Deno.writeTextFile(`${req}/${n}.sh.tmp`, script);
    await Deno.rename(`${req}/${n}.sh.tmp`, `${req}/${n}.sh`);
    const timeoutMs = command.timeoutMs ?? DEFAULT_COMMAND_TIMEOUT_MS;
    // Past the in-guest timeout and its kill grace, the agent itself is stuck.
    const deadline = Date.now() + timeoutMs + (KILL_GRACE_SECONDS + 30) * 1000;
    const onOutput = opts.onOutput;
    const tails = [new FileTail(`${out}/${n}.stdout`), new FileTail(`${out}/${n}.stderr`)];
    const forward = async () => {
      if (onOutput === undefined) return;
      const [stdout, stderr] = await Promise.all(tails.map((t) => t.read()));
      if (stdout) onOutput("stdout", stdout);
      if (stderr) onOutput("stderr", stderr);
    };
    await this.waitForFile(`${out}/${n}.code`, deadline, `running "${command.cmd}"`, forward);
    await forward();
    const [code, stdout, stderr] = await Promise.all(
      ["code", "stdout", "stderr"].map((f) => Deno.readTextFile(`${out}/${n}.${f}`)),
    );
    await Promise.all(
      [`${out}/${n}.code`, `${out}/${n}.stdout`, `${out}/${n}.stderr`, `${req}/${n}.sh`].concat(
        stdinPath === null ? [] : [`${req}/${n}.stdin`],
      ).map((p) => Deno.remove(p).catch(() => {})),
    );
    return { code: Number(code!.trim()), stdout: stdout!, stderr: stderr! };
  }

  console(): Promise<string> {
    return readTail(this.consoleFile, Infinity);
  }

  async stop(): Promise<void> {
    if (!this.exited) {
      await Deno.writeTextFile(`${this.ioDir}/${GUEST_LAYOUT.stopFile}`, "").catch(() => {});
      const killer = setTimeout(() => {
        try {
          this.child.kill("SIGKILL");
        } catch {
          // Exited meanwhile.
        }
      }, this.stopGraceMs);
      try {
        await this.status;
      } finally {
        clearTimeout(killer);
      }
    }
    await Deno.remove(this.ioDir, { recursive: true }).catch(() => {});
    await Deno.remove(this.consoleFile).catch(() => {});
  }
}
