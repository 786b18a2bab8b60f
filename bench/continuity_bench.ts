/**
 * Traffic continuity per case and mode, from the real-packet continuity cases: iptables and
 * nftables mode run tests/e2e/continuity_*_test.ts under `deno test` with CONTINUITY_REPORT
 * naming a file; IPVS mode (this machine's kernel has none) boots the qemu IPVS guest once and
 * runs tests/ipvs_guest/continuity_guest.ts there with CONTINUITY_REPORT=stdout, as the guest's
 * files stay in the guest, and reads the rows from its output. One table, printed after the
 * last scenario: sent, the rate the client kept, failed, the longest gap without an answer.
 * The time per iteration means nothing (each scenario runs once, on the first call). Needs
 * root.
 */
import { startIpvsGuest } from "../scripts/ipvs_vm/mod.ts";
import { GUEST_MODULES } from "../scripts/ipvs_vm/modules.ts";
import { CONTINUITY_ROW_PREFIX, type ContinuityRow } from "../tests/e2e/support/continuity.ts";

const HOST_CASES = ["udp", "restart", "rolling"] as const;
const GUEST_FILE = "tests/ipvs_guest/continuity_guest.ts";
/** The guest file's own budget is ~3 minutes; boot and slack on top. */
const GUEST_TIMEOUT_MS = 10 * 60_000;
const root = new URL("../", import.meta.url);
const REPO_ROOT = decodeURIComponent(root.pathname);
const decoder = new TextDecoder();

async function runHostCase(name: (typeof HOST_CASES)[number]): Promise<ContinuityRow[]> {
  const report = await Deno.makeTempFile({ prefix: "continuity-", suffix: ".jsonl" });
  try {
    const out = await new Deno.Command(Deno.execPath(), {
      args: ["test", "-A", `tests/e2e/continuity_${name}_test.ts`],
      cwd: root,
      env: { CONTINUITY_REPORT: report },
      stdout: "piped",
      stderr: "piped",
    }).output();
    if (out.code !== 0) {
      throw new Error(`Continuity case "${name}" failed:\n${decoder.decode(out.stdout)}`);
    }
    const text = await Deno.readTextFile(report);
    return text.split("\n").filter((l) => l).map((l) => JSON.parse(l) as ContinuityRow);
  } finally {
    await Deno.remove(report);
  }
}

/** Boots the guest, runs the IPVS continuity file with its output shown live, returns its rows. */
async function runGuestCases(): Promise<ContinuityRow[]> {
  // The guest has no network: what the file imports must be in the host's cache already.
  const cached = await new Deno.Command(Deno.execPath(), {
    args: ["cache", GUEST_FILE],
    cwd: REPO_ROOT,
  }).output();
  if (cached.code !== 0) throw new Error(`deno cache ${GUEST_FILE} failed`);
  const guest = await startIpvsGuest({ prepare: { modules: [...GUEST_MODULES] } });
  let text = "";
  try {
    const out = await guest.run({
      cmd: Deno.execPath(),
      args: ["test", "-A", "--no-check", GUEST_FILE],
      cwd: REPO_ROOT,
      // One emulated vCPU, as tests/e2e/ipvs_guest_test.ts runs the file.
      env: { NO_COLOR: "1", E2E_TIME_SCALE: "5", CONTINUITY_REPORT: "stdout" },
      timeoutMs: GUEST_TIMEOUT_MS,
    }, {
      onOutput: (stream, chunk) => {
        if (stream === "stdout") text += chunk;
        (stream === "stdout" ? Deno.stdout : Deno.stderr).writeSync(
          new TextEncoder().encode(chunk),
        );
      },
    });
    if (out.code !== 0) {
      console.error(`--- guest console\n${(await guest.console()).slice(-4000)}`);
      throw new Error(`${GUEST_FILE} in the IPVS guest exited ${out.code}`);
    }
  } finally {
    await guest.stop();
  }
  return text.split("\n").filter((l) => l.startsWith(CONTINUITY_ROW_PREFIX)).map((l) =>
    JSON.parse(l.slice(CONTINUITY_ROW_PREFIX.length)) as ContinuityRow
  );
}

/** Every row gathered so far, printed as one table once the last bench has run. */
const rows: ContinuityRow[] = [];

/** Prints the table straight to stdout: deno bench prefixes console output with the bench's name. */
function printTable(): void {
  // Each case's modes together, cases in the order they first ran.
  const order = [...new Set(rows.map((r) => r.case))];
  const byCase = [...rows].sort((a, b) => order.indexOf(a.case) - order.indexOf(b.case));
  const lines = [
    "| case | mode | sent | kept/s | failed | longest gap |",
    "| --- | --- | ---: | ---: | ---: | ---: |",
    ...byCase.map((r) => {
      const gap = r.longestGapMs === null ? "n/a" : `${r.longestGapMs} ms`;
      return `| ${r.case} | ${r.mode} | ${r.sent} | ${r.perSecond} | ${r.failed} | ${gap} |`;
    }),
  ];
  Deno.stdout.writeSync(new TextEncoder().encode(lines.join("\n") + "\n"));
}

// deno bench may call a bench more than once; each scenario runs once, and the table is
// printed after the last one.
const runs = new Map<string, Promise<void>>();
const scenarios: [string, () => Promise<ContinuityRow[]>][] = [
  ...HOST_CASES.map((name) =>
    [name, () => runHostCase(name)] as [string, () => Promise<ContinuityRow[]>]
  ),
  ["ipvs (in the qemu guest)", runGuestCases],
];

for (const [i, [name, run]] of scenarios.entries()) {
  Deno.bench({
    name: `continuity: ${name}`,
    group: "continuity",
    n: 1,
    warmup: 0,
    async fn() {
      if (!runs.has(name)) {
        runs.set(
          name,
          run().then((got) => {
            rows.push(...got);
            if (i === scenarios.length - 1) printTable();
          }),
        );
      }
      await runs.get(name);
    },
  });
}
