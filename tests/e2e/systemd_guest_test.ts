/**
 * The shipped systemd units, started for real: one qemu guest (scripts/systemd_vm) boots
 * systemd as PID 1 on a Debian root with the program installed, the units from deploy/systemd
 * are copied in as shipped, and systemctl drives them. The guest has no API server: the
 * environment file operators use for extra flags points the proxy at a manifest. A missing
 * qemu, kernel package or mmdebstrap fails this test; it never skips.
 *
 * IP plan inside the guest (the guest's root network namespace is the node): pod "pod-a"
 * 10.0.1.2 behind veth 10.0.1.1, client pod 10.0.2.2 behind veth 10.0.2.1, Service "web"
 * ClusterIP 172.30.0.10:80 -> 10.0.1.2:8080.
 */
import assert from "node:assert/strict";
import { KUBELET_OWNED_CHAINS } from "../../lib/netfilter/mod.ts";
import {
  GUEST_HOSTNAME,
  startSystemdGuest,
  type SystemdGuest,
} from "../../scripts/systemd_vm/mod.ts";

const DEPLOY = new URL("../../deploy/systemd/", import.meta.url);
const UNIT = "deno-kube-proxy.service";
const CLEANUP_UNIT = "deno-kube-proxy-cleanup.service";
const CLUSTER_IP = "172.30.0.10";
/** The proxy's start under one emulated vCPU (Deno alone takes several seconds there). */
const START_LIMIT_S = 150;

const CONFIG = (metricsPort: number) =>
  `apiVersion: kubeproxy.config.k8s.io/v1alpha1
kind: KubeProxyConfiguration
mode: iptables
clusterCIDR: 10.0.0.0/8
healthzBindAddress: 127.0.0.1:10256
metricsBindAddress: 127.0.0.1:${metricsPort}
iptables:
  syncPeriod: 30s
  minSyncPeriod: 1s
`;

const CLUSTER = `apiVersion: v1
kind: List
items:
  - apiVersion: v1
    kind: Node
    metadata: { name: ${GUEST_HOSTNAME} }
    status:
      addresses: [{ type: InternalIP, address: 192.168.0.2 }]
  - apiVersion: v1
    kind: Service
    metadata: { name: web, namespace: demo }
    spec:
      clusterIP: ${CLUSTER_IP}
      clusterIPs: [${CLUSTER_IP}]
      ports: [{ name: http, port: 80, targetPort: 8080, protocol: TCP }]
  - apiVersion: discovery.k8s.io/v1
    kind: EndpointSlice
    metadata:
      name: web-1
      namespace: demo
      labels: { kubernetes.io/service-name: web }
    addressType: IPv4
    ports: [{ name: http, port: 8080, protocol: TCP }]
    endpoints:
      - addresses: [10.0.1.2]
        conditions: { ready: true, serving: true, terminating: false }
        nodeName: ${GUEST_HOSTNAME}
`;

/** Two pod namespaces on veth pairs, and an echo server in pod-a naming itself and its peer. */
const PODS = `set -e
pod() {
  ip netns add "$1"
  ip link add "veth-$1" type veth peer name eth0 netns "$1"
  ip addr add "$2.1/24" dev "veth-$1"
  ip link set "veth-$1" up
  ip -n "$1" addr add "$2.2/24" dev eth0
  ip -n "$1" link set lo up
  ip -n "$1" link set eth0 up
  ip -n "$1" route add default via "$2.1"
}
pod pod-a 10.0.1
pod client 10.0.2
echo 1 > /proc/sys/net/ipv4/ip_forward
systemd-run --quiet --unit=echo-pod-a ip netns exec pod-a \\
  socat TCP-LISTEN:8080,fork,reuseaddr 'SYSTEM:echo pod-a $SOCAT_PEERADDR'
`;

/** Runs a bash script in the guest. */
async function sh(guest: SystemdGuest, script: string, timeoutMs = 60_000) {
  return await guest.run({ cmd: "bash", args: ["-c", script], timeoutMs });
}

/** The unit's state as `systemctl show` prints it, property -> value. */
async function show(guest: SystemdGuest, unit: string): Promise<Record<string, string>> {
  const props = "ActiveState,SubState,MainPID,NRestarts,Result,ExecMainCode,ExecMainStatus";
  const out = await sh(guest, `systemctl show -p ${props} ${unit}`);
  assert.equal(out.code, 0, out.stderr);
  return Object.fromEntries(
    out.stdout.trim().split("\n").map((l) => {
      const i = l.indexOf("=");
      return [l.slice(0, i), l.slice(i + 1)];
    }),
  );
}

/** What to read when a step fails: the unit's status and the end of its journal. */
async function diagnosis(guest: SystemdGuest): Promise<string> {
  const out = await sh(
    guest,
    `systemctl status --no-pager ${UNIT} ${CLEANUP_UNIT}; journalctl --no-pager -n 60 -u ${UNIT}`,
  );
  return `${out.stdout}${out.stderr}`;
}

/**
 * Waits (bounded, polling every half second in the guest) until `condition` succeeds; fails
 * with the unit's status and journal when `limitSeconds` pass first.
 */
async function waitUntil(
  guest: SystemdGuest,
  what: string,
  condition: string,
  limitSeconds: number,
) {
  const out = await sh(
    guest,
    `end=$((SECONDS + ${limitSeconds}))
until ${condition}; do
  if [ $SECONDS -ge $end ]; then exit 1; fi
  sleep 0.5
done`,
    (limitSeconds + 30) * 1000,
  );
  if (out.code !== 0) {
    assert.fail(`Not ${what} within ${limitSeconds} s\n${out.stderr}\n${await diagnosis(guest)}`);
  }
}

/**
 * The unit's current main process has finished a sync. /healthz alone answers 200 from the
 * start (as upstream's does until the first sync is overdue), so the wait reads the journal
 * of that process.
 */
const SYNCED = `pid=$(systemctl show -p MainPID --value ${UNIT}) && [ "$pid" != 0 ] &&
  journalctl --no-pager -o cat _PID=$pid | grep -q '"SyncProxyRules complete"'`;

/** SYNCED, by the process after the unit's `n`th restart. */
const restartedAndSynced = (n: number) =>
  `[ "$(systemctl show -p NRestarts --value ${UNIT})" = ${n} ] && ${SYNCED}`;

const kubeServicesRule = new RegExp(
  `^-A KUBE-SERVICES .*-d ${CLUSTER_IP.replaceAll(".", "\\.")}/32 `,
  "m",
);

async function iptablesSave(guest: SystemdGuest): Promise<string> {
  const out = await sh(guest, "iptables-save");
  assert.equal(out.code, 0, out.stderr);
  return out.stdout;
}

/** The HTTP status of a GET in the guest ("000" when nothing answers). */
async function httpStatus(guest: SystemdGuest, url: string): Promise<string> {
  return (await sh(guest, `curl -s -o /dev/null -w '%{http_code}' ${url}`)).stdout;
}

/** Shell text of a TCP request from the client pod to the ClusterIP. */
const CLIENT_REQUEST =
  `ip netns exec client socat -T 5 - TCP:${CLUSTER_IP}:80,connect-timeout=5 < /dev/null`;

/** A TCP request from the client pod to the ClusterIP; returns what answered. */
async function requestClusterIP(guest: SystemdGuest): Promise<string> {
  const out = await sh(guest, CLIENT_REQUEST);
  assert.equal(out.code, 0, `ClusterIP request failed: ${out.stderr}`);
  return out.stdout.trim();
}

/** kubelet's iptables chains: a cleanup of kube-proxy's rules leaves them. */

/** The pod's answer: its name and the client pod's own address (not masqueraded). */
const ECHO = "pod-a 10.0.2.2";

Deno.test("e2e: the shipped systemd units run the proxy under systemd as PID 1", async (t) => {
  const launched = Date.now();
  const guest = await startSystemdGuest();
  try {
    console.log(`systemd guest: prepared in ${guest.prepareMs} ms, booted in ${guest.bootMs} ms`);
    const install: [string, string][] = [
      [`/etc/systemd/system/${UNIT}`, await Deno.readTextFile(new URL(UNIT, DEPLOY))],
      [
        `/etc/systemd/system/${CLEANUP_UNIT}`,
        await Deno.readTextFile(new URL(CLEANUP_UNIT, DEPLOY)),
      ],
      ["/var/lib/kube-proxy/config.conf", CONFIG(10249)],
      ["/etc/deno-kube-proxy/cluster.yaml", CLUSTER],
      [
        "/etc/default/deno-kube-proxy",
        "KUBE_PROXY_ARGS=--manifests=/etc/deno-kube-proxy/cluster.yaml -v=2\n",
      ],
    ];
    for (const [path, text] of install) {
      const out = await guest.run({
        cmd: "bash",
        args: ["-c", `mkdir -p "$(dirname "$1")" && cat > "$1"`, "install", path],
        stdin: text,
      });
      assert.equal(out.code, 0, out.stderr);
    }
    // Enabled, as on a node: systemd then keeps a stopped unit's exit status to show.
    const setup = await sh(guest, `${PODS}systemctl daemon-reload && systemctl enable ${UNIT}`);
    assert.equal(setup.code, 0, setup.stderr);

    let mainPid = "";
    await t.step(
      "systemctl start: the rules appear, /healthz answers, the ClusterIP works",
      async () => {
        const started = Date.now();
        const out = await sh(guest, `systemctl start ${UNIT}`);
        assert.equal(out.code, 0, out.stderr);
        await waitUntil(guest, "synced", SYNCED, START_LIMIT_S);
        console.log(`proxy synced ${Date.now() - started} ms after systemctl start`);
        assert.equal(await httpStatus(guest, "http://127.0.0.1:10256/healthz"), "200");
        assert.match(await iptablesSave(guest), kubeServicesRule);
        assert.equal(await requestClusterIP(guest), ECHO);
        const state = await show(guest, UNIT);
        assert.equal(state.ActiveState, "active");
        assert.equal(state.NRestarts, "0");
        mainPid = state.MainPID!;
      },
    );

    await t.step(
      "an edited config file: the program exits 2, systemd restarts it on the new file",
      async () => {
        const out = await sh(guest, "sed -i 's/:10249$/:10259/' /var/lib/kube-proxy/config.conf");
        assert.equal(out.code, 0, out.stderr);
        await waitUntil(guest, "restarted and synced", restartedAndSynced(1), START_LIMIT_S);
        const state = await show(guest, UNIT);
        assert.notEqual(state.MainPID, mainPid);
        mainPid = state.MainPID!;
        assert.equal(await httpStatus(guest, "http://127.0.0.1:10259/metrics"), "200");
        assert.equal(await httpStatus(guest, "http://127.0.0.1:10249/metrics"), "000");
        const journal = await sh(guest, `journalctl --no-pager -o cat -u ${UNIT}`);
        assert.match(journal.stdout, /changed on disk/);
        assert.match(journal.stdout, /Main process exited, code=exited, status=2\//);
      },
    );

    await t.step(
      "kill -9 of the main PID: the rules stay meanwhile, systemd restarts it",
      async () => {
        // One guest command, so the look at the rules falls within the restart delay
        // (RestartSec=2) where it can; on a slow guest systemd may already have started the
        // next process, which replaces the rules atomically and so never removes them either.
        const out = await sh(
          guest,
          `kill -9 ${Number(mainPid)}
end=$((SECONDS + 10))
until [ "$(systemctl show -p SubState --value ${UNIT})" = auto-restart ] ||
  ! [ "$(systemctl show -p MainPID --value ${UNIT})" -eq ${Number(mainPid)} ]; do
  if [ $SECONDS -ge $end ]; then echo "the killed process was not noticed" >&2; exit 1; fi
done
iptables-save
${CLIENT_REQUEST}`,
        );
        assert.equal(out.code, 0, `${out.stderr}\n${await diagnosis(guest)}`);
        assert.match(out.stdout, kubeServicesRule);
        assert.match(out.stdout, new RegExp(`^${ECHO}$`, "m"));
        await waitUntil(guest, "restarted and synced", restartedAndSynced(2), START_LIMIT_S);
        const state = await show(guest, UNIT);
        assert.equal(state.ActiveState, "active");
        assert.notEqual(state.MainPID, mainPid);
        const journal = await sh(guest, `journalctl --no-pager -o cat -u ${UNIT}`);
        assert.match(journal.stdout, /Main process exited, code=killed, status=9\/KILL/);
      },
    );

    await t.step("systemctl stop: exit status 0, Result=success, the rules are kept", async () => {
      const out = await sh(guest, `systemctl stop ${UNIT}`, 120_000);
      assert.equal(out.code, 0, out.stderr);
      const state = await show(guest, UNIT);
      assert.equal(state.ActiveState, "inactive");
      assert.equal(state.Result, "success");
      // Exited on its own (CLD_EXITED = 1) with status 0, not killed by the signal.
      assert.equal(state.ExecMainCode, "1");
      assert.equal(state.ExecMainStatus, "0");
      assert.match(await iptablesSave(guest), kubeServicesRule);
      assert.equal(await requestClusterIP(guest), ECHO);
    });

    await t.step(
      "the cleanup unit stops the proxy it conflicts with and removes its rules",
      async () => {
        const start = await sh(guest, `systemctl start ${UNIT}`);
        assert.equal(start.code, 0, start.stderr);
        await waitUntil(guest, "synced", SYNCED, START_LIMIT_S);
        const out = await sh(guest, `systemctl start ${CLEANUP_UNIT}`, 180_000);
        assert.equal(out.code, 0, `${out.stderr}\n${await diagnosis(guest)}`);
        assert.equal((await show(guest, UNIT)).ActiveState, "inactive");
        const journal = await sh(guest, `journalctl --no-pager -o cat -u ${CLEANUP_UNIT}`);
        assert.match(journal.stdout, /Finished deno-kube-proxy-cleanup\.service/);
        const saved = await iptablesSave(guest);
        assert.ok(!saved.includes(CLUSTER_IP), saved);
        // Only kubelet's chains may stay (the proxy keeps a copy of KUBE-FIREWALL), as upstream's
        // cleanup leaves them.
        const left = new Set(saved.match(/KUBE-[A-Z0-9-]+/g) ?? []);
        for (const chain of left) {
          assert.ok(KUBELET_OWNED_CHAINS.has(chain), `"${chain}" is left\n${saved}`);
        }
        const request = await sh(guest, CLIENT_REQUEST);
        assert.notEqual(request.code, 0, `the ClusterIP still answers: ${request.stdout}`);
      },
    );

    await t.step("journalctl -u shows the program's klog lines", async () => {
      const out = await sh(guest, `journalctl --no-pager -o cat -u ${UNIT}`);
      assert.equal(out.code, 0, out.stderr);
      assert.match(out.stdout, /^I\d{4} [\d:.]+ "Using iptables proxy"/m);
      assert.match(out.stdout, /^I\d{4} [\d:.]+ "SyncProxyRules complete" elapsed="[\d.]+s"/m);
    });
  } finally {
    await guest.stop();
    console.log(`systemd guest total ${Date.now() - launched} ms`);
  }
});
