// One class file of prom-client (lib/registry.js, lib/counter.js, ...): its default export is
// the class, typed as unknown here and narrowed to prom-client's own declaration in prom.ts.
declare const implementation: unknown;
export default implementation;
