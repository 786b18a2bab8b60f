/**
 * Upstream's packet-flow cases (runPacketFlowTests) with real packets: the real program in
 * iptables mode, fed by manifests, in network namespaces, over the tables every mode shares
 * (tests/e2e/flows). Each table shares one topology and one proxy run. Needs root; fails loudly
 * without it.
 */
import { PACKET_FLOW_TABLES } from "./flows/packet_flows.ts";
import { registerFlowTables } from "./support/flow_table.ts";

registerFlowTables("iptables", PACKET_FLOW_TABLES);
