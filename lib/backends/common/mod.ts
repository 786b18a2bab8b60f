/** Public face of lib/backends/common: what every mode's renderer shares. */
export * from "./name_hash.ts";
export * from "./untrusted_value.ts";
export * from "./masquerade_mark.ts";
export * from "./lines_text.ts";
