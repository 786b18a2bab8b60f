/** `promtool check metrics` over an exposition, for the tests that lint each mode's metrics. */

/**
 * Metric names promtool's linter objects to that upstream kube-proxy exposes itself: gauges
 * whose names end in `_total` (upstream's names, kept for dashboards and alerts).
 */
export const UPSTREAM_TOTAL_GAUGES = [
  "kubeproxy_sync_proxy_rules_iptables_total",
  "kubeproxy_sync_proxy_rules_no_local_endpoints_total",
];

/** Runs `promtool check metrics` over `text`; returns its complaints but upstream's own. */
export async function promtoolProblems(text: string): Promise<string[]> {
  const child = new Deno.Command("promtool", {
    args: ["check", "metrics"],
    stdin: "piped",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  const writer = child.stdin.getWriter();
  await writer.write(new TextEncoder().encode(text));
  await writer.close();
  const out = await child.output();
  const said = new TextDecoder().decode(out.stdout) + new TextDecoder().decode(out.stderr);
  const problems = said.split("\n").map((l) => l.trim()).filter((l) => l !== "");
  return problems.filter((p) =>
    !UPSTREAM_TOTAL_GAUGES.some((name) =>
      p.startsWith(`${name} non-counter metrics should not have "_total" suffix`)
    )
  );
}
