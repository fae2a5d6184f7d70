import { lookup as dnsLookup, type LookupAddress } from 'node:dns';
import { isIP } from 'node:net';
import { networkInterfaces } from 'node:os';
import type { ServiceIdentifier } from 'inversify';
import type { Agent, buildConnector, Dispatcher, fetch as undiciFetch } from 'undici';
import { TrellisError } from '../errors.js';
import { lazyRequire } from '../lazy.js';
import { canonicalAddress, inRange, parseAddress, parseRange, specialPurposeRange } from './address-policy.js';

/** `network.allowPrivateNetworks`: `false`, `true`, or the hosts, ports and CIDR ranges let through. */
export type AllowPrivateNetworks = boolean | readonly string[];

/** `dns.lookup` with `all: true`, as the guard calls it. */
export type GuardResolver = (hostname: string) => Promise<LookupAddress[]>;

export interface NetworkGuardOptions {
  allowPrivateNetworks: AllowPrivateNetworks;
  /** How names are resolved. Default: `dns.lookup` (the system resolver); tests inject their own. */
  resolve?: GuardResolver;
  /** This host's own interface addresses. Default: `os.networkInterfaces()`, read at each connection. */
  localAddresses?: () => Iterable<string>;
  /** Connection timeout of the dispatcher. Default 10 s. */
  connectTimeoutMs?: number;
}

/** Error code of a refused destination. */
export const destinationRefusedCode = 'destination_refused';

export const destinationRefused = (host: string, reason: string) =>
  new TrellisError('bad_request', destinationRefusedCode, `The server may not connect to ${host}: ${reason}. Allow it with network.allowPrivateNetworks if it is a trusted internal service.`);

/** The guard's refusal in `error` or its chain of causes (fetch wraps it in `TypeError: fetch failed`). */
export function refusalOf(error: unknown): TrellisError | undefined {
  for (let current = error, depth = 0; current && depth < 8; depth += 1) {
    if (current instanceof TrellisError && current.code === destinationRefusedCode) return current;
    current = (current as { cause?: unknown }).cause;
  }
  return undefined;
}

/**
 * undici (some 95 modules) is required when the guard's dispatcher is first used, by the first
 * outbound call, not when the package is imported: the kernel builds a guard at start, and most
 * processes (each `trellis` command) never connect out.
 */
const undici = lazyRequire<{ Agent: typeof Agent; buildConnector: typeof buildConnector; fetch: typeof undiciFetch }>('undici');

const systemResolve: GuardResolver = (hostname) =>
  new Promise((resolve, reject) => dnsLookup(hostname, { all: true, verbatim: true }, (error, addresses) => (error ? reject(error) : resolve(addresses))));

const interfaceAddresses = () =>
  Object.values(networkInterfaces())
    .flat()
    .map((info) => info?.address)
    .filter((address): address is string => Boolean(address));

const portPattern = /^\d{1,5}$/;
const hostPattern = /^(\*\.)?[a-z0-9_]([a-z0-9_-]*[a-z0-9_])?(\.[a-z0-9_]([a-z0-9_-]*[a-z0-9_])?)*\.?$/;

/** Reads the entries of an allow list; throws a `RangeError` naming the first one that is none of a port, an address or range, or a host name. */
function parseAllowList(entries: readonly string[]) {
  const ports = new Set<number>();
  const ranges: Array<NonNullable<ReturnType<typeof parseRange>>> = [];
  const hosts: string[] = [];
  for (const raw of entries) {
    const entry = raw.trim().toLowerCase();
    if (portPattern.test(entry) && Number(entry) >= 1 && Number(entry) <= 65_535) ports.add(Number(entry));
    else if (/^[\d.]+(\/\d+)?$|:/.test(entry)) {
      const range = parseRange(entry);
      if (!range) throw new RangeError(`network.allowPrivateNetworks: "${raw}" is not an IP address or CIDR range.`);
      ranges.push(range);
    } else if (hostPattern.test(entry)) hosts.push(entry.replace(/\.$/, ''));
    else throw new RangeError(`network.allowPrivateNetworks: "${raw}" is not a port, an IP address or CIDR range, or a host name.`);
  }
  return { ports, ranges, hosts };
}

/**
 * The one guard on the server's outbound connections (AI models, embedders, `http` and `mcp` tool
 * actions). It checks each connection when it is opened, on the addresses actually connected to:
 * names are resolved by the guard's own lookup and every address is checked before the socket
 * connects, so a name that answers differently on a second resolution (DNS rebinding) gains
 * nothing, and a redirect opens a new, checked connection. Refused: every IANA special-purpose
 * range (loopback, private, link-local, carrier-grade NAT, unique-local, multicast, reserved, ...),
 * IPv4 addresses embedded in IPv6 forms (mapped, SIIT, NAT64, 6to4, Teredo, IPv4-compatible), and
 * the host's own interface addresses. `network.allowPrivateNetworks` opens it: `true` for every
 * destination, or a list of ports, addresses or CIDR ranges, and host names (`*.internal` for a
 * domain and its subdomains).
 */
export class NetworkGuard {
  private agent?: Dispatcher;
  private readonly connectTimeoutMs: number;
  private readonly open: boolean;
  private readonly rules: ReturnType<typeof parseAllowList>;
  private readonly resolve: GuardResolver;
  private readonly localAddresses: () => Iterable<string>;
  private closing?: Promise<void>;

  constructor(options: NetworkGuardOptions) {
    this.open = options.allowPrivateNetworks === true;
    this.rules = parseAllowList(Array.isArray(options.allowPrivateNetworks) ? options.allowPrivateNetworks : []);
    this.resolve = options.resolve ?? systemResolve;
    this.localAddresses = options.localAddresses ?? interfaceAddresses;
    this.connectTimeoutMs = options.connectTimeoutMs ?? 10_000;
  }

  /** The undici dispatcher whose connections are checked; pass it to `undici.request`/`fetch`. Made on first use. */
  get dispatcher(): Dispatcher {
    if (this.agent) return this.agent;
    const { Agent, buildConnector } = undici();
    const connectOptions = { timeout: this.connectTimeoutMs };
    this.agent = new Agent({
      connect: (connection, callback) => {
        const host = connection.hostname.replace(/^\[|\]$/g, '');
        const port = Number(connection.port) || (connection.protocol === 'https:' ? 443 : 80);
        if (isIP(host)) {
          // Node connects to an address literal without calling `lookup`: check it here.
          const refused = this.refusal(host, port, [host]);
          if (refused) return callback(refused, null);
          return buildConnector(connectOptions)(connection, callback);
        }
        buildConnector({ ...connectOptions, lookup: this.lookupFor(host, port) })(connection, callback);
      },
    });
    // Made after `close()`: closed too, as the guard's dispatcher was before it was made lazily.
    if (this.closing) void this.agent.close().catch(() => undefined);
    return this.agent;
  }

  /**
   * `fetch` through the guard: what the server passes to the AI SDK providers, the MCP SDK's
   * transport and its own calls. Redirects, when followed, open checked connections too.
   */
  readonly fetch: typeof globalThis.fetch = ((input: Parameters<typeof globalThis.fetch>[0], init?: RequestInit) =>
    undici().fetch(input as never, { ...(init as object), dispatcher: this.dispatcher } as never)) as unknown as typeof globalThis.fetch;

  /** Why a connection to `host:port` at `addresses` is refused, or `undefined`. */
  refusal(host: string, port: number, addresses: readonly string[]): TrellisError | undefined {
    if (this.open || this.rules.ports.has(port) || this.hostAllowed(host)) return undefined;
    if (addresses.length === 0) return destinationRefused(host, 'it has no address');
    for (const address of addresses) {
      const reason = this.addressRefusal(address);
      if (reason) return destinationRefused(host, reason);
    }
    return undefined;
  }

  /** Why `address` is refused (ignoring host and port rules), or `null`. */
  addressRefusal(address: string): string | null {
    if (this.open) return null;
    const ip = parseAddress(address);
    if (!ip) return 'it is not an IP address';
    if (this.rules.ranges.some((range) => inRange(ip, range))) return null;
    const range = specialPurposeRange(ip);
    if (range) return `it is a ${range} address`;
    const canonical = canonicalAddress(ip);
    for (const local of this.localAddresses()) {
      const own = parseAddress(local.split('%')[0]!);
      if (own && canonicalAddress(own) === canonical) return 'it is an address of this host';
    }
    return null;
  }

  private hostAllowed(host: string): boolean {
    const name = host.toLowerCase().replace(/\.$/, '');
    return this.rules.hosts.some((rule) => (rule.startsWith('*.') ? name === rule.slice(2) || name.endsWith(rule.slice(1)) : name === rule));
  }

  /** A `net.connect` lookup for one connection: the guard's resolver, every answer checked. */
  private lookupFor(host: string, port: number) {
    return (hostname: string, options: { all?: boolean; family?: number | string }, callback: (error: NodeJS.ErrnoException | null, address: string | LookupAddress[], family?: number) => void) => {
      this.resolve(hostname).then(
        (answers) => {
          const family = options.family === 'IPv4' ? 4 : options.family === 'IPv6' ? 6 : options.family;
          const wanted = family === 4 || family === 6 ? answers.filter((entry) => entry.family === family) : answers;
          const refused = this.refusal(host, port, answers.map((entry) => entry.address));
          if (refused) return callback(refused as unknown as NodeJS.ErrnoException, '', 4);
          if (options.all) return callback(null, wanted);
          const first = wanted[0];
          if (!first) return callback(Object.assign(new Error(`${hostname} has no address`), { code: 'ENOTFOUND' }), '', 4);
          callback(null, first.address, first.family);
        },
        (error: NodeJS.ErrnoException) => callback(error, '', 4),
      );
    };
  }

  /** Closes the dispatcher's pooled connections. */
  close(): Promise<void> {
    // A guard that never connected has no dispatcher to close (and makes none to close it).
    this.closing ??= this.agent ? this.agent.close() : Promise.resolve();
    return this.closing;
  }
}

export const networkGuardServiceIdentifier: ServiceIdentifier<NetworkGuard> = Symbol.for('@trellis/core/NetworkGuard');

/**
 * The effective `network.allowPrivateNetworks`, with the deprecated `ai.tools.allowPrivateNetworks`
 * (`true` opens the guard, as it opened tool actions) folded in. `deprecated` tells the caller to warn.
 */
export function allowPrivateNetworksOf(config: { network?: { allowPrivateNetworks?: AllowPrivateNetworks }; ai?: unknown }): { allow: AllowPrivateNetworks; deprecated: boolean } {
  const allow = config.network?.allowPrivateNetworks ?? false;
  const alias = (config.ai as { tools?: { allowPrivateNetworks?: boolean } } | undefined)?.tools?.allowPrivateNetworks === true;
  return { allow: alias && allow !== true ? true : allow, deprecated: alias };
}
