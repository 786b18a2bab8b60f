/** Public face of lib/backends/nftables: so far only `--cleanup` of the `kube-proxy` tables. */
export * from "./cleanup.ts";
