/**
 * What the systemd guest's root holds besides its packages (pure data, no I/O): the unit that
 * runs the command agent, the host name, and the units masked because a test guest without a
 * network, terminals or timers has no use for them and they slow the boot under emulation.
 */
import { GUEST_LAYOUT } from "../ipvs_vm/mod.ts";

/** The guest's host name: also its node name, as the shipped unit passes `%H`. */
export const GUEST_HOSTNAME = "systemd-guest";

/** Name of the unit that runs the command agent from the io share. */
export const AGENT_UNIT = "test-guest-agent.service";

/** Units masked in the guest (linked to /dev/null). */
export const MASKED_UNITS: readonly string[] = [
  "getty@tty1.service",
  "serial-getty@ttyS0.service",
  "getty.target",
  "apt-daily.timer",
  "apt-daily-upgrade.timer",
  "dpkg-db-backup.timer",
  "e2scrub_all.timer",
  "e2scrub_reap.service",
  "fstrim.timer",
  "systemd-pstore.service",
  "systemd-timesyncd.service",
  "systemd-logind.service",
  "remote-fs.target",
];

/** A file of the guest's root: path relative to the root, and either text or a symlink. */
export type GuestRootFile =
  | { readonly path: string; readonly text: string }
  | { readonly path: string; readonly symlink: string };

/**
 * The agent's unit: it starts once the local file systems are up and runs the agent the host
 * wrote into the io share (`agentScript({ variant: "service" })`), which powers the guest off
 * with `systemctl poweroff` when the host asks it to stop.
 */
export function agentUnit(): string {
  const { ioMount, agentFile } = GUEST_LAYOUT;
  return `[Unit]
Description=Test guest command agent (requests from the host over 9p)
RequiresMountsFor=${ioMount}

[Service]
Type=exec
ExecStart=/bin/bash ${ioMount}/${agentFile}
# Requests are the host's commands: nothing they start belongs to the agent's lifetime.
KillMode=process
StandardOutput=journal+console
StandardError=journal+console

[Install]
WantedBy=multi-user.target
`;
}

/** Every file the builder writes into the guest's root on top of its packages. */
export function guestRootFiles(): GuestRootFile[] {
  return [
    { path: "etc/hostname", text: `${GUEST_HOSTNAME}\n` },
    { path: `etc/systemd/system/${AGENT_UNIT}`, text: agentUnit() },
    {
      path: `etc/systemd/system/multi-user.target.wants/${AGENT_UNIT}`,
      symlink: `/etc/systemd/system/${AGENT_UNIT}`,
    },
    { path: "etc/systemd/system/default.target", symlink: "/lib/systemd/system/multi-user.target" },
    ...MASKED_UNITS.map((unit) => ({ path: `etc/systemd/system/${unit}`, symlink: "/dev/null" })),
  ];
}
