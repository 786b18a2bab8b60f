import assert from "node:assert/strict";
import { createIptablesProxier } from "../../../lib/backends/iptables/proxier.ts";
import type { ServicePortState } from "../../../lib/proxy/mod.ts";
import { createFakeIptables } from "../../support/fake_iptables.ts";
import { ep, key, sps, state, svc } from "./state_fixtures.ts";

const N = 10_000;

function cluster(changedEndpointIP: string): ServicePortState[] {
  const out: ServicePortState[] = [];
  for (let i = 0; i < N; i++) {
    const ip = `172.30.${Math.floor(i / 250)}.${(i % 250) + 1}`;
    const epIP = i === 0 ? changedEndpointIP : `10.${Math.floor(i / 250)}.${i % 250}.2`;
    out.push(
      sps(svc({ name: `svc${i}`, clusterIP: ip }), [
        ep(epIP, 8080),
        ep(`10.200.${Math.floor(i / 250)}.${i % 250}`, 8080),
      ]),
    );
  }
  return out;
}

function lines(text: string | undefined): number {
  return (text ?? "").split("\n").filter((l) => l.length > 0).length;
}

Deno.test("createIptablesProxier() keeps a one-service change at 10,000 services proportional to the change", async () => {
  const ipt = createFakeIptables();
  const proxier = createIptablesProxier({
    family: "IPv4",
    flavour: "legacy",
    runner: ipt.run,
    clusterCIDRs: ["10.0.0.0/8"],
  });
  const restores = () => ipt.calls.filter((c) => c.cmd.endsWith("-restore"));
  const lastRestore = () => restores().at(-1)!.stdin ?? "";

  const first = await proxier.sync(state(cluster("10.0.0.2"), { forceFullSync: true }));
  assert.equal(first.full, true);
  const fullLines = lines(lastRestore());

  const second = await proxier.sync(state(cluster("10.99.0.2"), { changed: [key("ns1", "svc0")] }));
  assert.equal(second.full, false);
  const partialLines = lines(lastRestore());

  // Upstream rewrites the top-level chains whole (KUBE-SERVICES holds one rule per service);
  // an endpoint move leaves them as they were, so only svc0's chains (and its stale SEP
  // chain) appear.
  const kubeServicesRules =
    lastRestore().split("\n").filter((l) => l.startsWith("-A KUBE-SERVICES ")).length;
  assert.equal(kubeServicesRules, 0);
  assert.ok(partialLines < 60, `partial payload has ${partialLines} lines`);
  assert.ok(partialLines * 3 < fullLines, `partial ${partialLines} vs full ${fullLines} lines`);
  assert.match(ipt.save("legacy", "IPv4", "nat"), /DNAT --to-destination 10\.99\.0\.2:8080/);
  assert.doesNotMatch(ipt.save("legacy", "IPv4", "nat"), /10\.0\.0\.2:8080/);
});
