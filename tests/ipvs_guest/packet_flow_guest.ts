/**
 * Runs INSIDE the IPVS guest (tests/e2e/ipvs_guest_test.ts boots it and runs this file): the
 * packet-flow tables of every mode (tests/e2e/flows), run against `--proxy-mode=ipvs` with
 * real TCP and UDP packets. The tables carry IPVS's own expectations where upstream's IPVS
 * proxier differs (REFERENCE_MODES §2-3). Named `*_guest.ts` so the host's `deno test` skips it.
 */
import { PACKET_FLOW_TABLES } from "../e2e/flows/packet_flows.ts";
import { registerFlowTables } from "../e2e/support/flow_table.ts";

registerFlowTables("ipvs", PACKET_FLOW_TABLES);
