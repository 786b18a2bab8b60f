/**
 * The endpoint half of a service port's rules: the random (and sticky) dispatch from a
 * KUBE-SVC/KUBE-SVL chain and the KUBE-SEP chain of each endpoint.
 */
import type { Endpoint, ServicePort } from "../../proxy/mod.ts";
import { KUBE_MARK_MASQ } from "./chain_names.ts";
import { quoted, type RulePart } from "../../netfilter/mod.ts";
import type { RuleBuffers } from "./rule_buffer.ts";

/** What the endpoint writers need to know about the service port. */
export interface EndpointRenderContext {
  readonly buffers: RuleBuffers;
  /**
   * The SEP name of each reachable endpoint, looked up once per render; the cluster and local
   * endpoint sets are both drawn from the reachable ones.
   */
  readonly endpointChains: ReadonlyMap<Endpoint, string>;
  /** The servicePortKey owning the lines. */
  readonly key: string;
  /** `ns/name:port`. */
  readonly name: string;
  /** Lower-case protocol. */
  readonly protocol: string;
  readonly info: ServicePort;
  /** Above 1000 endpoints upstream drops these comments. */
  readonly largeClusterMode: boolean;
}

/** `--probability` text of 1/n, `%0.10f` as upstream formats it. */
export function probability(n: number): string {
  return (1 / n).toFixed(10);
}

function comment(ctx: EndpointRenderContext, text: string): RulePart {
  return ctx.largeClusterMode ? [] : ["-m", "comment", "--comment", text];
}

/** The SEP chain of `ep` in this render. */
function sepOf(ctx: EndpointRenderContext, ep: Endpoint): string {
  const sep = ctx.endpointChains.get(ep);
  if (sep === undefined) {
    throw new Error(`Endpoint ${ep.address} of ${ctx.name} is not among its reachable endpoints`);
  }
  return sep;
}

/** Sticky checks first (ClientIP affinity), then one random rule per endpoint, last always. */
export function writeServiceToEndpointRules(
  ctx: EndpointRenderContext,
  svcChain: string,
  endpoints: readonly Endpoint[],
): void {
  const { buffers: b, key, name, info } = ctx;
  if (info.stickyMaxAgeSeconds > 0) {
    for (const ep of endpoints) {
      const sep = sepOf(ctx, ep);
      const recent = ["-m", "recent", "--name", sep, "--rcheck", "--seconds"];
      b.nat(
        key,
        "-A",
        svcChain,
        comment(ctx, quoted(`${name} -> ${ep.address}`)),
        recent,
        String(info.stickyMaxAgeSeconds),
        "--reap",
        "-j",
        sep,
      );
    }
  }
  // The lines of the commonest rules are written out rather than joined from parts.
  const head = `-A ${svcChain} `;
  const last = endpoints.length - 1;
  for (let i = 0; i <= last; i++) {
    const ep = endpoints[i]!;
    const sep = sepOf(ctx, ep);
    const note = ctx.largeClusterMode
      ? ""
      : `-m comment --comment ${quoted(`${name} -> ${ep.address}`)} `;
    const random = i < last
      ? `-m statistic --mode random --probability ${probability(endpoints.length - i)} `
      : "";
    b.natLine(key, svcChain, `${head}${note}${random}-j ${sep}`);
  }
}

/** Writes one endpoint's KUBE-SEP chain (hairpin masquerade, DNAT) and returns its name. */
export function writeEndpointChain(ctx: EndpointRenderContext, ep: Endpoint): string {
  const { buffers: b, key, name, protocol, info } = ctx;
  const sep = sepOf(ctx, ep);
  const head = ctx.largeClusterMode ? `-A ${sep} ` : `-A ${sep} -m comment --comment ${name} `;
  b.natLine(key, sep, `${head}-s ${ep.ip} -j ${KUBE_MARK_MASQ}`);
  const affinity = info.stickyMaxAgeSeconds > 0 ? `-m recent --name ${sep} --set ` : "";
  b.natLine(
    key,
    sep,
    `${head}${affinity}-m ${protocol} -p ${protocol} -j DNAT --to-destination ${ep.address}`,
  );
  return sep;
}
