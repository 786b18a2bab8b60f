/**
 * Traffic continuity per case and mode, from the real-packet e2e cases
 * (tests/e2e/continuity_*_test.ts, iptables and nftables mode): each bench runs one file under
 * `deno test` with CONTINUITY_REPORT set and prints what its clients saw: sent, failed, longest
 * gap without an answer. The time per iteration is the scenario's length, not a figure to
 * compare. Needs root.
 */
const CASES = ["udp", "restart", "rolling"] as const;
const root = new URL("../", import.meta.url);

interface Row {
  readonly mode: string;
  readonly case: string;
  readonly sent: number;
  readonly failed: number;
  readonly longestGapMs: number | null;
}

async function runCase(name: (typeof CASES)[number]): Promise<Row[]> {
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
      throw new Error(`Continuity case "${name}" failed:\n${new TextDecoder().decode(out.stdout)}`);
    }
    const text = await Deno.readTextFile(report);
    return text.split("\n").filter((l) => l).map((l) => JSON.parse(l) as Row);
  } finally {
    await Deno.remove(report);
  }
}

function print(rows: readonly Row[]): void {
  console.log("| case | mode | sent | failed | longest gap |");
  console.log("| --- | --- | ---: | ---: | ---: |");
  for (const r of rows) {
    const gap = r.longestGapMs === null ? "n/a" : `${r.longestGapMs} ms`;
    console.log(`| ${r.case} | ${r.mode} | ${r.sent} | ${r.failed} | ${gap} |`);
  }
}

// deno bench may call a bench more than once; each scenario runs and prints once.
const runs = new Map<string, Promise<void>>();

for (const name of CASES) {
  Deno.bench({
    name: `continuity: ${name}`,
    group: "continuity",
    n: 1,
    warmup: 0,
    async fn() {
      if (!runs.has(name)) runs.set(name, runCase(name).then(print));
      await runs.get(name);
    },
  });
}
