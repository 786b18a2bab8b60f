/**
 * Public face of lib/backends/common: what the modes share above the kernel toolkits (the
 * renderers' naming and text helpers, the iptables start check).
 */
export { linesText } from "./lines_text.ts";
export { masqueradeMarkText } from "./masquerade_mark.ts";
export { nameHash } from "./name_hash.ts";
export { requireIptables } from "./require_iptables.ts";
