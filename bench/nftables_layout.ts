/**
 * Measures our nftables layout with raw `nft -f` in a throwaway network namespace (root
 * needed): cold load of N services × M endpoints, then one endpoint replaced (partial
 * transaction from the table store). Usage: `deno run -A bench/nftables_layout.ts 10000 10`.
 */
import {
  fullTransaction,
  newNftTableStore,
  resolveNftRenderConfig,
  updateNftTableStore,
} from "../lib/backends/nftables/mod.ts";
import { firstEndpointMoved, scaleState } from "./nftables_scale_state.ts";

const n = Number(Deno.args[0] ?? 1000);
const m = Number(Deno.args[1] ?? 10);
const ns = `knl-layout-${Deno.pid}`;

async function nft(stdin?: string, args: string[] = ["-f", "-"]): Promise<number> {
  const t0 = performance.now();
  const child = new Deno.Command("ip", {
    args: ["netns", "exec", ns, "nft", ...args],
    stdin: stdin === undefined ? "null" : "piped",
    stdout: "null",
    stderr: "piped",
  }).spawn();
  if (stdin !== undefined) {
    const w = child.stdin.getWriter();
    await w.write(new TextEncoder().encode(stdin));
    await w.close();
  }
  const out = await child.output();
  if (out.code !== 0) throw new Error(new TextDecoder().decode(out.stderr).slice(0, 2000));
  return performance.now() - t0;
}

await new Deno.Command("ip", { args: ["netns", "add", ns] }).output();
try {
  const s1 = scaleState(n, m);
  let t0 = performance.now();
  const config = resolveNftRenderConfig(s1, { clusterCIDRs: ["10.0.0.0/8"] });
  const store = newNftTableStore(config);
  store.suspendTracking();
  updateNftTableStore(store, s1, config, true);
  const model = store.model();
  store.markWritten();
  const tx1 = fullTransaction(model);
  const tRender = performance.now() - t0;
  const tLoad = await nft(tx1.script);
  console.log(
    `${n}x${m}: render+script ${tRender.toFixed(0)} ms, nft -f full ${tLoad.toFixed(0)} ms,` +
      ` ${
        (tx1.script.length / 1e6).toFixed(1)
      } MB, chains ${model.chains.size}, sets ${model.sets.size}`,
  );
  let prev = s1;
  for (const ip of ["10.255.255.2", "10.255.255.3"]) {
    const s2 = firstEndpointMoved(prev, m, ip);
    t0 = performance.now();
    updateNftTableStore(store, s2, config, false);
    const tx2 = store.takeTransaction()!;
    const tRender2 = performance.now() - t0;
    const tLoad2 = await nft(tx2.script);
    console.log(
      `one endpoint: render+diff ${tRender2.toFixed(1)} ms, nft -f partial ${
        tLoad2.toFixed(0)
      } ms: ` +
        JSON.stringify({ ...tx2, script: tx2.script.length }),
    );
    prev = s2;
  }
} finally {
  await new Deno.Command("ip", { args: ["netns", "del", ns] }).output();
}
