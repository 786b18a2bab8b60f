/**
 * Public face of lib/trace/ipvs: the IPVS-mode tracer (virtual servers, ipsets, iptables and
 * kube-ipvs0 addresses, read from the kernel or rendered for a state) and the service names
 * a caller with cluster state can attach to what it read.
 */
export { ipvsTracer, traceIpvs } from "./tracer.ts";
export {
  type IpvsRules,
  ipvsServiceNames,
  parseLinkAddresses,
  readIpvsRules,
  renderedIpvsRules,
} from "./rules.ts";
