/**
 * Public face of lib/backends/ipvs: IPVS mode (`ipvsMode`, what the registry lists), and for
 * tests and tools elsewhere its proxier, chain names and ipvsadm reader.
 */
export { KUBE_IPVS_DEVICE } from "./cleanup.ts";
export { DRAIN_CHECK_INTERVAL_ENV } from "./drain_check_interval.ts";
export { ipvsModeOptions } from "./ipvs_options.ts";
export { parseIpvsadmList } from "./ipvsadm_parser.ts";
export { ipvsMode } from "./mode.ts";
export { createIpvsProxier } from "./proxier.ts";
export { IPVS_FILTER_CHAINS, IPVS_JUMP_CHAINS, IPVS_NAT_CHAINS } from "./render_iptables.ts";
export { ipvsTracer } from "./tracer.ts";
export { type RealServer, type VirtualServerState } from "./virtual_server.ts";
