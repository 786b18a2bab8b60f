/**
 * The two shell scripts the guest runs (pure text, no I/O): `/init` in the initramfs, which
 * loads modules and switches into the host's root, and the command agent, which then serves
 * host requests over the read-write 9p share until told to stop.
 */

/** Mount tags and paths shared by the qemu command line, the init script and the agent. */
export const GUEST_LAYOUT = {
  /** 9p tag of the host's root filesystem (read-only). */
  rootTag: "hostroot",
  /** 9p tag of the read-write request/response folder. */
  ioTag: "guestio",
  /** Where the request/response folder is mounted inside the guest. */
  ioMount: "/ipvs-guest-io",
  /** The agent script, relative to the request/response folder. */
  agentFile: "agent.sh",
  /** Written by the agent (relative to the folder) once it is serving. */
  readyFile: "ready",
  /** Written by the host to make the agent power the guest off. */
  stopFile: "stop",
} as const;

/** Options of the init script. */
export interface InitScriptOptions {
  /** 9p message size in bytes; larger is faster for big files. */
  readonly msize: number;
  /** tmpfs size of the overlay's writable layer, e.g. "70%". */
  readonly upperSize: string;
  /**
   * 9p tags of extra read-only layers stacked over the shared root, the first one topmost
   * (e.g. a program layer that changes more often than the root below it); default none.
   */
  readonly extraLowerTags?: readonly string[];
  /** What switch_root runs as PID 1; default the command agent from the io share. */
  readonly exec?: string;
}

/** `/init` of the initramfs, run by busybox sh as PID 1. */
export function initScript(opts: InitScriptOptions): string {
  const { rootTag, ioTag, ioMount, agentFile } = GUEST_LAYOUT;
  const p9 = `trans=virtio,version=9p2000.L,msize=${opts.msize}`;
  const extra = opts.extraLowerTags ?? [];
  for (const tag of extra) {
    if (!/^[A-Za-z0-9_]+$/.test(tag) || tag === rootTag || tag === ioTag) {
      throw new Error(`Invalid extra lower tag "${tag}": expected [A-Za-z0-9_]+, not a used tag`);
    }
  }
  const extraMounts = extra.map((tag, i) =>
    `mkdir -p /lower${i + 1}\n` +
    `mount -t 9p -o ${p9},ro,cache=loose ${tag} /lower${i + 1} || fail "mount ${tag} failed"\n`
  ).join("");
  const lowerDirs = [...extra.map((_, i) => `/lower${i + 1}`), "/lower"].join(":");
  const exec = opts.exec ?? `/bin/bash ${ioMount}/${agentFile}`;
  return `#!/bin/sh
# IPVS test guest, stage 1: modules, then the host's root (read-only 9p) under a tmpfs overlay.
export PATH=/bin
mount -t devtmpfs devtmpfs /dev
exec 0</dev/console 1>/dev/console 2>&1
mount -t proc proc /proc
mount -t sysfs sysfs /sys
fail() { echo "ipvs-guest-init: $*"; echo o > /proc/sysrq-trigger; sleep 10; }
for m in /modules/*.ko; do
  insmod "$m" 2>/tmp.err || { cat /tmp.err; fail "insmod $m failed"; }
done
mount -t 9p -o ${p9},ro,cache=loose ${rootTag} /lower || fail "mount ${rootTag} failed"
${extraMounts}mount -t tmpfs -o size=${opts.upperSize},mode=0755 tmpfs /rw || fail "mount tmpfs failed"
mkdir -p /rw/upper /rw/work
mount -t overlay overlay -o lowerdir=${lowerDirs},upperdir=/rw/upper,workdir=/rw/work /newroot ||
  fail "mount overlay failed"
mkdir -p /newroot${ioMount}
mount -t 9p -o ${p9},cache=none ${ioTag} /newroot${ioMount} || fail "mount ${ioTag} failed"
umount /proc /sys
mount --move /dev /newroot/dev
exec switch_root /newroot ${exec}
`;
}

/** Options of the agent script. */
export interface AgentScriptOptions {
  /** Seconds between looks for the next request; the per-command latency floor. */
  readonly pollSeconds: number;
  /**
   * "pid1" (default): run by /init's switch_root, the agent mounts /proc, /sys, /run and the
   * rest itself and powers off through sysrq. "service": run as a unit under systemd, which
   * mounted all that; the agent powers off with `systemctl poweroff`.
   */
  readonly variant?: "pid1" | "service";
}

/**
 * The command agent, run by bash as PID 1 after switch_root (or as a systemd unit, see
 * `variant`). Request N is `req/N.sh` (renamed into place whole); its output goes to
 * `out/N.stdout` and `out/N.stderr`, then its exit code and a newline to `out/N.code` (the host
 * waits for the newline). Every process costs ~0.1 s under emulation, so the loop forks only to
 * run the request itself.
 */
export function agentScript(opts: AgentScriptOptions): string {
  const { ioMount, readyFile, stopFile } = GUEST_LAYOUT;
  const service = opts.variant === "service";
  const setup = service
    ? `# Test guest agent, run as a systemd unit: systemd mounted /proc, /sys and /run.
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
export HOME=/root
io=${ioMount}
`
    : `# IPVS test guest, stage 2: a fresh /proc, /sys, /run, then serve requests.
# /tmp stays the host's (read-only below the overlay): the repository may live there, as a CI clone does.
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
export HOME=/root
io=${ioMount}
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mkdir -p /dev/pts /dev/shm
mount -t devpts devpts /dev/pts
mount -t tmpfs tmpfs /dev/shm
# devtmpfs lacks the /dev/fd and /dev/std* links that systemd and container runtimes make;
# tools read "-" as /dev/stdin (conntrack -R -).
ln -sfn /proc/self/fd /dev/fd
ln -sf /proc/self/fd/0 /dev/stdin
ln -sf /proc/self/fd/1 /dev/stdout
ln -sf /proc/self/fd/2 /dev/stderr
mount -t tmpfs -o mode=0755 tmpfs /run
mount -t tmpfs tmpfs /var/tmp
mount -t bpf bpf /sys/fs/bpf 2>/dev/null
hostname ipvs-guest
ip link set lo up
`;
  const powerOff = service ? "exec systemctl poweroff\n" : `echo o > /proc/sysrq-trigger
sleep 30
`;
  return `${setup}mkdir -p "$io/req" "$io/out"
read -r uptime _ < /proc/uptime
echo "$uptime" > "$io/${readyFile}"
# A FIFO nobody writes: "read -t" on it is a sleep without a fork.
mkfifo /run/ipvs-guest-idle
exec 9<>/run/ipvs-guest-idle
n=0
while [ ! -e "$io/${stopFile}" ]; do
  if [ -e "$io/req/$n.sh" ]; then
    ( . "$io/req/$n.sh" ) > "$io/out/$n.stdout" 2> "$io/out/$n.stderr" < /dev/null 9<&-
    echo $? > "$io/out/$n.code"
    n=$((n + 1))
  else
    read -r -t ${opts.pollSeconds} -u 9 _
  fi
done
sync
${powerOff}`;
}
