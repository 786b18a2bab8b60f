/**
 * The packet-flow tables (tests/e2e/flows) with real packets against the real program in
 * nftables mode, each case with its nftables expectation (e.g. localhost NodePorts are not
 * served, as upstream). Needs root and nft; fails loudly without them.
 */
import { PACKET_FLOW_TABLES } from "./flows/packet_flows.ts";
import { registerFlowTables } from "./support/flow_table.ts";

registerFlowTables("nftables", PACKET_FLOW_TABLES);
