/**
 * A bounded memo of the SHA-256 chain-name hashes. Hashing is most of the cost of a render at
 * scale, and the same few names (one per service port, one per endpoint) come back every sync,
 * so a proxier keeps one of these for its lifetime. Names are exactly chain_names.ts's.
 */
import {
  chainHash,
  endpointHashInput,
  EXT_PREFIX,
  FW_PREFIX,
  hashedChainName,
  portProtoHashInput,
  SEP_PREFIX,
  SVC_PREFIX,
  SVL_PREFIX,
} from "./chain_names.ts";
import { servicePortNameString, type ServicePortState } from "../../proxy/mod.ts";

/**
 * Default bound. Up to half of it in use (65,536 names, e.g. 10,000 service ports with five
 * endpoints each) stays cached for good; a full cache costs a few hundred bytes an entry. A
 * proxier with more names in use grows it (fit).
 */
export const DEFAULT_CHAIN_NAME_CACHE_ENTRIES = 131_072;

/** How to build a ChainNameCache. */
export interface ChainNameCacheOptions {
  /** Most hashes held at once (at least 2); default DEFAULT_CHAIN_NAME_CACHE_ENTRIES. */
  readonly maxEntries?: number;
}

/** The names of one service port state's chains (ChainNameCache.namesOf). */
export interface ServicePortNames {
  /** Its SVC/SVL/EXT/FW names, each hashed on first use. */
  readonly chains: ServicePortChains;
  /**
   * The SEP name of each reachable endpoint, in the order of `allReachableEndpoints` (an array:
   * held for every service port, it weighs a fraction of a map).
   */
  readonly endpoints: readonly string[];
}

/** KUBE-SEP-<hash> of an endpoint hash input (one function for every lookup, made once). */
const endpointChainName = (input: string) => hashedChainName(SEP_PREFIX, input);

/**
 * Memoizes chainHash() by its input string in two generations of at most half the bound each:
 * when the young one is full it becomes the old one and the previous old one is dropped; a hit
 * in the old one moves back to the young one. Lookups stay one Map.get, names in use survive,
 * and names nobody asked for during a whole generation go away.
 */
export class ChainNameCache {
  #generationSize: number;
  #young = new Map<string, string>();
  #old = new Map<string, string>();
  /** The names of each service port state a render asked for, for as long as the state lives. */
  readonly #byState = new WeakMap<ServicePortState, ServicePortNames>();

  /** Creates an empty cache; throws RangeError on a bad bound. */
  constructor(options: ChainNameCacheOptions = {}) {
    const max = options.maxEntries ?? DEFAULT_CHAIN_NAME_CACHE_ENTRIES;
    if (!Number.isSafeInteger(max) || max < 2) {
      throw new RangeError(
        `Invalid chain name cache maxEntries "${max}": expected an integer of at least 2`,
      );
    }
    this.#generationSize = Math.floor(max / 2);
  }

  /** The bound on held hashes: two generations. */
  get maxEntries(): number {
    return 2 * this.#generationSize;
  }

  /**
   * Grows the bound so that `names` hashes asked for again and again (one render's) all stay
   * held, with a quarter more for churn; never shrinks it. With generations smaller than a
   * render's names, every render would drop about half of them and hash them again: at 10,000
   * service ports with 10 endpoints each (~110,000 names), that doubled the render's time.
   */
  fit(names: number): void {
    const wanted = Math.ceil(names * 1.25);
    if (wanted > this.#generationSize) this.#generationSize = wanted;
  }

  /** Hashes held now (never more than maxEntries). */
  get size(): number {
    return this.#young.size + this.#old.size;
  }

  /** Whether the hash of `input` is held now (a lookup that does not refresh it). */
  has(input: string): boolean {
    return this.#young.has(input) || this.#old.has(input);
  }

  /** chainHash(input), computed at most once while the input stays in use. */
  hash(input: string): string {
    return this.#memo(input, chainHash);
  }

  /**
   * `make(input)`, held under `input`. Service port inputs end in a protocol and endpoint inputs
   * in a port number, so the hashes and the SEP names held never share a key.
   */
  #memo(input: string, make: (input: string) => string): string {
    const young = this.#young.get(input);
    if (young !== undefined) return young;
    // A first render finds the old generation empty: no second lookup.
    let value = this.#old.size === 0 ? undefined : this.#old.get(input);
    if (value === undefined) value = make(input);
    else this.#old.delete(input);
    if (this.#young.size >= this.#generationSize) {
      this.#old = this.#young;
      this.#young = new Map();
    }
    this.#young.set(input, value);
    return value;
  }

  /**
   * The names of `sps`'s own chains, kept with the state object. The tracker hands a service
   * port that did not change over as the very same object, snapshot after snapshot, so a render
   * finds its names by identity instead of joining and hashing a key per endpoint to look each
   * one up here (at 10,000 service ports, most of a render after one endpoint change).
   */
  namesOf(sps: ServicePortState): ServicePortNames {
    let names = this.#byState.get(sps);
    if (names === undefined) {
      const name = servicePortNameString(sps.info.name);
      const protocol = sps.info.protocol.toLowerCase();
      const endpoints = sps.allReachableEndpoints.map((ep) =>
        this.endpointChain(name, protocol, ep.address)
      );
      names = { chains: this.servicePortChains(name, protocol), endpoints };
      this.#byState.set(sps, names);
    }
    return names;
  }

  /** The SVC/SVL/EXT/FW names of one service port; each hashes on first use only. */
  servicePortChains(servicePortName: string, protocol: string): ServicePortChains {
    return new ServicePortChains(this, servicePortName, protocol);
  }

  /**
   * KUBE-SEP-<hash> of one endpoint of one service port (servicePortEndpointChain). The whole
   * name is held, so every render and the proxier's set of its chains share one string.
   */
  endpointChain(servicePortName: string, protocol: string, endpointAddress: string): string {
    const input = endpointHashInput(servicePortName, protocol, endpointAddress);
    return this.#memo(input, endpointChainName);
  }
}

/**
 * The per-service-port chain names, computed lazily: a service port without endpoints never
 * needs them, so it never pays for the hash.
 */
export class ServicePortChains {
  readonly #cache: ChainNameCache;
  readonly #input: string;
  #hash: string | undefined;
  // Each name is made once, so every line naming it holds the same string.
  #cluster: string | undefined;
  #local: string | undefined;
  #external: string | undefined;
  #firewall: string | undefined;

  /** Names for `servicePortName` over `protocol`, hashed through `cache` when first needed. */
  constructor(cache: ChainNameCache, servicePortName: string, protocol: string) {
    this.#cache = cache;
    this.#input = portProtoHashInput(servicePortName, protocol);
  }

  #suffix(): string {
    return this.#hash ??= this.#cache.hash(this.#input);
  }

  /** KUBE-SVC-<hash> (servicePortPolicyClusterChain). */
  get cluster(): string {
    return this.#cluster ??= SVC_PREFIX + this.#suffix();
  }

  /** KUBE-SVL-<hash> (servicePortPolicyLocalChain). */
  get local(): string {
    return this.#local ??= SVL_PREFIX + this.#suffix();
  }

  /** KUBE-EXT-<hash> (serviceExternalChain). */
  get external(): string {
    return this.#external ??= EXT_PREFIX + this.#suffix();
  }

  /** KUBE-FW-<hash> (serviceFirewallChain). */
  get firewall(): string {
    return this.#firewall ??= FW_PREFIX + this.#suffix();
  }
}
