/** The proxier on a stateful fake iptables, shared by the proxier's test files. */
import { createIptablesProxier } from "../../../lib/backends/iptables/proxier.ts";
import type { BackendMetrics } from "../../../lib/backends/mod.ts";
import { createMemoryLogger } from "../../../lib/log/mod.ts";
import { createFakeIptables, type FakeIptables } from "../../support/fake_iptables.ts";
import { ep, sps, state, svc } from "./state_fixtures.ts";

/** The chains of ns1/svc1:p80 (tcp) and of its endpoint 10.180.0.1:80. */
export const SVC1 = "KUBE-SVC-XPGD46QRK7WJZT7O";
export const SEP1 = "KUBE-SEP-SXIVWICOYRO3J4NJ";

/** Backend metrics that count apply failures (all, and of partial syncs). */
export function counters() {
  const c = { failures: 0, partial: 0 };
  const metrics: BackendMetrics = {
    applyFailed: (full) => {
      c.failures++;
      if (!full) c.partial++;
    },
    cleanupFailed: () => {},
    synced: () => {},
  };
  return { c, metrics };
}

/** A proxier on `fake`, with views of the fake's tables. */
export function setup(
  fake: FakeIptables = createFakeIptables(),
  family: "IPv4" | "IPv6" = "IPv4",
  flavour: "legacy" | "nft" = "legacy",
) {
  const { c, metrics } = counters();
  const logger = createMemoryLogger();
  const proxier = createIptablesProxier({
    family,
    flavour,
    runner: fake.run,
    clusterCIDRs: ["10.0.0.0/8"],
    logger,
    metrics,
  });
  const chains = (table = "nat") => [...fake.table(flavour, family, table).keys()];
  const rulesOf = (chain: string, table = "nat") =>
    fake.table(flavour, family, table).get(chain)?.rules;
  return { fake, proxier, c, logger, chains, rulesOf };
}

/** svc1 with two endpoints. */
export const twoEndpoints = () => state([sps(svc(), [ep("10.180.0.1"), ep("10.180.0.2")])]);

/** A fake whose legacy nat holds a service chain and its endpoint chain an earlier process left. */
export function fakeWithStaleChains(): FakeIptables {
  const fake = createFakeIptables();
  fake.restore(
    "legacy",
    "IPv4",
    "*nat\n:KUBE-SVC-OLDOLDOLDOLDOLDO - [0:0]\n:KUBE-SEP-OLDOLDOLDOLDOLDO - [0:0]\n-A KUBE-SVC-OLDOLDOLDOLDOLDO -j KUBE-SEP-OLDOLDOLDOLDOLDO\nCOMMIT\n",
  );
  return fake;
}
