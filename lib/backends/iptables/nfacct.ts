/**
 * The two netfilter accounting (nfacct) objects upstream's iptables mode counts packets with:
 * the INVALID-state drop rule in KUBE-FORWARD and the localhost NodePort rules in KUBE-NODEPORTS
 * feed them (`-m nfacct --nfacct-name NAME`), and /metrics reads them at scrape time. Driven
 * through the `nfacct` binary: `nfacct list` prints every object in one run, `nfacct add` makes
 * one (and fails when it exists).
 */
import type { CommandRunner } from "../../exec/mod.ts";
import type { Logger } from "../../log/mod.ts";

/** Packets dropped by the INVALID-state rule (kubeproxy_iptables_ct_state_invalid_dropped_...). */
export const CT_STATE_INVALID_DROPPED_COUNTER = "ct_state_invalid_dropped_pkts";
/** Packets accepted on localhost NodePorts (kubeproxy_iptables_localhost_nodeports_accepted_...). */
export const LOCALHOST_NODEPORTS_ACCEPTED_COUNTER = "localhost_nps_accepted_pkts";
/** Both objects, in the order upstream ensures them. */
export const NFACCT_COUNTERS: readonly string[] = [
  CT_STATE_INVALID_DROPPED_COUNTER,
  LOCALHOST_NODEPORTS_ACCEPTED_COUNTER,
];

/** One object's counts. */
export interface NfacctCounts {
  readonly packets: number;
  readonly bytes: number;
}

/** `{ pkts = 00000000000000000012, bytes = 00000000000000000720 } = NAME;` lines, by name. */
export function parseNfacctList(text: string): Map<string, NfacctCounts> {
  const out = new Map<string, NfacctCounts>();
  const re = /\{\s*pkts\s*=\s*(\d+),\s*bytes\s*=\s*(\d+)\s*\}\s*=\s*([^;\s]+);/g;
  for (const m of text.matchAll(re)) {
    out.set(m[3]!, { packets: Number(m[1]), bytes: Number(m[2]) });
  }
  return out;
}

/** The nfacct objects of this network namespace, made and read through the `nfacct` binary. */
export interface NfacctClient {
  /** Every object with its counts; throws when nfacct cannot be run or the kernel refuses. */
  list(): Promise<Map<string, NfacctCounts>>;
  /**
   * Makes each of `names` that is missing; returns those that exist afterwards. A name that
   * cannot be made is logged (its rule and metric are left out) and left out of the result.
   */
  ensure(names: readonly string[]): Promise<ReadonlySet<string>>;
}

/** Creates the client over `runner`. */
export function createNfacctClient(runner: CommandRunner, logger: Logger): NfacctClient {
  const list = async () => {
    const out = await runner({ cmd: "nfacct", args: ["list"] });
    if (out.code !== 0) {
      throw new Error(`nfacct list failed (exit ${out.code}): ${out.stderr.trim()}`);
    }
    return parseNfacctList(out.stdout);
  };
  return {
    list,
    async ensure(names) {
      const present = new Set((await list()).keys());
      for (const name of names) {
        if (present.has(name)) continue;
        const out = await runner({ cmd: "nfacct", args: ["add", name] });
        if (out.code === 0) present.add(name);
        else {
          logger.error(
            "Failed to create nfacct counter; the corresponding metric will not be updated",
            {
              counter: name,
              stderr: out.stderr.trim(),
            },
          );
        }
      }
      return new Set(names.filter((n) => present.has(n)));
    },
  };
}

/**
 * Whether nfacct works on this node: `nfacct list` runs and the kernel answers. When it does
 * not (no binary, no nfnetlink_acct), one line says so and the nfacct matches and metrics are
 * left out, as upstream does when its nfacct client cannot be made.
 */
export async function probeNfacct(
  client: NfacctClient,
  logger: Logger,
): Promise<boolean> {
  try {
    await client.list();
    return true;
  } catch (err) {
    logger.warn("nfacct is not available, nfacct based metrics won't be available", { err });
    return false;
  }
}
