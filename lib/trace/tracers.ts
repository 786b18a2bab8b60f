/**
 * The one map from mode name to that mode's tracer. Modes without a tracer yet are absent;
 * `trace` says so instead of guessing.
 */
import { iptablesTracer } from "./iptables/mod.ts";
import { ipvsTracer } from "./ipvs/mod.ts";
import { nftablesTracer } from "./nftables/mod.ts";
import type { ProxyModeName } from "../config/mod.ts";
import type { ModeTracer } from "./tracer.ts";

/** Every mode's tracer, by `--proxy-mode` name. */
// deno-lint-ignore no-explicit-any
export const TRACERS: Readonly<Partial<Record<ProxyModeName, ModeTracer<any>>>> = {
  iptables: iptablesTracer,
  ipvs: ipvsTracer,
  nftables: nftablesTracer,
};
