/**
 * The four prom-client classes the proxy uses, loaded one file each instead of through
 * prom-client's index: the index also loads Summary (tdigest, bintrees), Pushgateway
 * (node:http/https) and the cluster aggregator (node:cluster), which cost resident memory and
 * start-up time for nothing the proxy serves. Types still come from prom-client's
 * own declarations.
 */
import type * as Prom from "prom-client";
// @ts-types="./prom_parts.d.ts"
import RegistryImpl from "prom-client/lib/registry.js";
// @ts-types="./prom_parts.d.ts"
import CounterImpl from "prom-client/lib/counter.js";
// @ts-types="./prom_parts.d.ts"
import GaugeImpl from "prom-client/lib/gauge.js";
// @ts-types="./prom_parts.d.ts"
import HistogramImpl from "prom-client/lib/histogram.js";

/** prom-client's Registry. */
export const Registry: typeof Prom.Registry = RegistryImpl as typeof Prom.Registry;
/** prom-client's Registry. */
export type Registry = Prom.Registry;
/** prom-client's Counter. */
export const Counter: typeof Prom.Counter = CounterImpl as typeof Prom.Counter;
/** prom-client's Counter. */
export type Counter<T extends string = string> = Prom.Counter<T>;
/** prom-client's Gauge. */
export const Gauge: typeof Prom.Gauge = GaugeImpl as typeof Prom.Gauge;
/** prom-client's Gauge. */
export type Gauge<T extends string = string> = Prom.Gauge<T>;
/** prom-client's Histogram. */
export const Histogram: typeof Prom.Histogram = HistogramImpl as typeof Prom.Histogram;
/** prom-client's Histogram. */
export type Histogram<T extends string = string> = Prom.Histogram<T>;
