/**
 * The demo's nftables-mode output (`deno task demo -- --proxy-mode nftables`): the table the
 * proxy wrote, as an operator reads it with `nft list table ip kube-proxy`. Kept apart from
 * scripts/demo.ts so each mode's extra output lives in its own module.
 */

/** Runs a command in the demo's node namespace. */
export type NodeRunner = (
  cmd: string,
  args: string[],
) => Promise<{ code: number; stdout: string; stderr: string }>;

/** Prints `nft list table ip kube-proxy` from the node namespace; throws when nft fails. */
export async function printNftablesTable(run: NodeRunner, heading: (t: string) => void) {
  heading("nft list table ip kube-proxy (the proxy's table)");
  const out = await run("nft", ["list", "table", "ip", "kube-proxy"]);
  if (out.code !== 0) {
    throw new Error(`nft list table ip kube-proxy exited ${out.code}: ${out.stderr.trim()}`);
  }
  console.log(out.stdout.trimEnd());
}
