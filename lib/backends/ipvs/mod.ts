/** Public face of lib/backends/ipvs: so far only `--cleanup` of IPVS, its device and ipsets. */
export * from "./cleanup.ts";
export * from "./ipset_names.ts";
