/** Public face of lib/backends/common: what every mode's renderer shares. */
export { linesText } from "./lines_text.ts";
export { masqueradeMarkText } from "./masquerade_mark.ts";
export { nameHash } from "./name_hash.ts";
