/**
 * A booted systemd guest: Debian's kernel (the IPVS guest's boot machinery) with systemd as
 * PID 1 on a cached Debian root, the program as its own layer on top, and the command agent
 * running as a systemd unit. Commands run with the guest's programs and files, not the host's.
 */
import {
  GUEST_DIR_PREFIX,
  HOST_PID_FILE,
  type IpvsGuest,
  prepareGuestImage,
  type PrepareOptions,
  startIpvsGuest,
} from "../ipvs_vm/mod.ts";
import {
  PROGRAM_TAG,
  SYSTEMD_GUEST_ENV,
  SYSTEMD_INIT_OPTIONS,
  SYSTEMD_KERNEL_ARGS,
} from "./boot_options.ts";
import { prepareSystemdRoot, type SystemdRootOptions } from "./guest_root.ts";
import { stageProgram, type StageProgramOptions } from "../image/mod.ts";
import { requireCommands } from "../netns/mod.ts";

/** Options of `startSystemdGuest`; every field has a working default. */
export interface SystemdGuestOptions {
  /** Kernel and initramfs; the init options are always SYSTEMD_INIT_OPTIONS. */
  readonly prepare?: Omit<PrepareOptions, "init">;
  readonly root?: SystemdRootOptions;
  /** How the program is installed into its layer (scripts/image's `stageProgram`). */
  readonly program?: StageProgramOptions;
  /** Launch to agent ready; default 240 s, room for a busy machine under emulation. */
  readonly bootTimeoutMs?: number;
  /** Parent of the program layer's temporary folder; default $TMPDIR or /tmp. */
  readonly tmpDir?: string;
}

/** A running systemd guest; `stop()` powers it off and removes the program layer. */
export interface SystemdGuest extends IpvsGuest {
  /** Milliseconds spent preparing the root and staging the program before launch. */
  readonly prepareMs: number;
}

/** Prepares the root, stages the program and boots; throws (nothing left running) on failure. */
export async function startSystemdGuest(options: SystemdGuestOptions = {}): Promise<SystemdGuest> {
  // Fail before any build or boot when a tool is missing, even if the caches would do.
  requireCommands(["mmdebstrap", "qemu-system-x86_64"]);
  const started = Date.now();
  const image = await prepareGuestImage({ ...options.prepare, init: SYSTEMD_INIT_OPTIONS });
  const rootDir = await prepareSystemdRoot(options.root);
  const tmpDir = options.tmpDir ?? Deno.env.get("TMPDIR") ?? "/tmp";
  // Named and marked as the IPVS guest's folders are, so that a later start removes it when
  // this process dies without stop().
  const layerParent = await Deno.makeTempDir({ dir: tmpDir, prefix: GUEST_DIR_PREFIX });
  await Deno.writeTextFile(`${layerParent}/${HOST_PID_FILE}`, `${Deno.pid}\n`);
  const layer = `${layerParent}/root`;
  const removeLayer = () => Deno.remove(layerParent, { recursive: true }).catch(() => {});
  try {
    await stageProgram(layer, options.program);
    const prepareMs = Date.now() - started;
    const guest: IpvsGuest = await startIpvsGuest({
      image,
      rootDir,
      extraShares: [{ tag: PROGRAM_TAG, path: layer }],
      kernelArgs: SYSTEMD_KERNEL_ARGS,
      agentVariant: "service",
      baseEnv: SYSTEMD_GUEST_ENV,
      bootTimeoutMs: options.bootTimeoutMs ?? 240_000,
      // systemd stops its units before it powers off.
      stopGraceMs: 60_000,
      tmpDir,
      label: "systemd guest",
    });
    return {
      prepareMs,
      get bootMs() {
        return guest.bootMs;
      },
      run: (command, opts) => guest.run(command, opts),
      console: () => guest.console(),
      stop: async () => {
        try {
          await guest.stop();
        } finally {
          await removeLayer();
        }
      },
    };
  } catch (err) {
    await removeLayer();
    throw err;
  }
}
