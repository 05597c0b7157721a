import { lookup as dnsLookup } from "node:dns/promises";
import ipaddr from "ipaddr.js";

/** Resolves a host name to every address it has (A and AAAA). Swappable in tests. */
export type Lookup = (host: string) => Promise<string[]>;

const LOOKUP_TIMEOUT_MS = 5_000;

/** The system resolver, bounded: a resolver that hangs must not hang a request or a worker. */
export const systemLookup: Lookup = async (host) => {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error("DNS lookup timed out")), LOOKUP_TIMEOUT_MS);
  });
  try {
    return (await Promise.race([dnsLookup(host, { all: true, verbatim: true }), timeout])).map((a) => a.address);
  } finally {
    clearTimeout(timer);
  }
};

const READABLE: Record<string, string> = {
  loopback: "a loopback",
  private: "a private",
  uniqueLocal: "a private",
  linkLocal: "a link-local",
  carrierGradeNat: "a carrier-grade NAT",
  multicast: "a multicast",
  broadcast: "a broadcast",
  unspecified: "an unspecified",
};

const v4 = (bytes: number[]) => new ipaddr.IPv4(bytes);
const LOCAL_NAT64 = ipaddr.parseCIDR("64:ff9b:1::/48");

/**
 * The IPv4 addresses an IPv6 address carries inside, which is what a connection to it may reach
 * (through a translator, a tunnel, or a stack that maps it): IPv4-mapped ::ffff:0:0/96, the
 * deprecated IPv4-compatible ::/96, SIIT ::ffff:0:0:0/96, NAT64 64:ff9b::/96 and the local-use
 * 64:ff9b:1::/48 (read as /96; its operator may place the address elsewhere, so that prefix is
 * refused whatever it carries), 6to4 2002::/16 and Teredo 2001::/32 (server, and the client XOR-ed).
 */
export function embeddedIPv4(ip: ipaddr.IPv6): ipaddr.IPv4[] {
  const b = ip.toByteArray();
  switch (ip.range()) {
    case "ipv4Mapped":
    case "rfc6145":
    case "rfc6052":
      return [v4(b.slice(12, 16))];
    case "6to4":
      return [v4(b.slice(2, 6))];
    case "teredo":
      return [v4(b.slice(4, 8)), v4(b.slice(12, 16).map((x) => x ^ 0xff))];
  }
  // IPv4-compatible: 96 zero bits, then the address (:: and ::1 are judged as themselves).
  if (b.slice(0, 12).every((x) => x === 0) && ip.range() === "unicast") return [v4(b.slice(12, 16))];
  return [];
}

/** IPv6 forms refused whatever they carry: deprecated, or routed through someone's local translator or relay. */
const REFUSED_CARRIERS: Record<string, string> = { teredo: "a Teredo", compatible: "a deprecated IPv4-compatible", localNat64: "a local-use NAT64" };

function carrierKind(ip: ipaddr.IPv6): string | null {
  if (ip.match(LOCAL_NAT64)) return "localNat64";
  if (ip.range() === "teredo") return "teredo";
  const b = ip.toByteArray();
  if (b.slice(0, 12).every((x) => x === 0) && ip.range() === "unicast") return "compatible";
  return null;
}

function ipv4Reason(ip: ipaddr.IPv4): string | null {
  const range = ip.range();
  return range === "unicast" ? null : `resolves to ${READABLE[range] ?? "a reserved"} address (${ip.toString()})`;
}

/**
 * An address in its canonical form. IPv6 goes through the URL parser first: ipaddr.js reads the
 * dotted tail of "::8.8.8.8" as IPv4-mapped, while the address is IPv4-compatible (::808:808).
 */
function parseAddress(address: string): ipaddr.IPv4 | ipaddr.IPv6 | null {
  let text = address;
  if (address.includes(":")) {
    try {
      text = new URL(`http://[${address}]/`).hostname.slice(1, -1);
    } catch {
      return null;
    }
  }
  return ipaddr.isValid(text) ? ipaddr.parse(text) : null;
}

/**
 * Why an address must not be a webhook target, or null when it is an ordinary public unicast
 * address. A pure function of the address: nothing is resolved or connected. Only `unicast`
 * passes: loopback, private, link-local, CGNAT, multicast, broadcast, unspecified,
 * documentation/benchmark/reserved ranges are refused, and an IPv6 address carrying an IPv4
 * address (see `embeddedIPv4`) is judged by what it carries, in every spelling of it.
 */
export function forbiddenAddressReason(address: string): string | null {
  const ip = parseAddress(address);
  if (!ip) return "is not a valid IP address";
  if (ip.kind() === "ipv4") return ipv4Reason(ip as ipaddr.IPv4);
  const v6 = ip as ipaddr.IPv6;
  const shown = v6.toString();
  for (const inner of embeddedIPv4(v6)) {
    const reason = ipv4Reason(inner);
    if (reason) return `${reason.replace(/\)$/, "")}, inside ${shown})`;
  }
  const carrier = carrierKind(v6);
  if (carrier) return `resolves to ${REFUSED_CARRIERS[carrier]} address (${shown})`;
  const range = v6.range();
  if (range === "unicast" || embeddedIPv4(v6).length > 0) return null;
  return `resolves to ${READABLE[range] ?? "a reserved"} address (${shown})`;
}

const hostOf = (url: URL) => url.hostname.replace(/^\[|\]$/g, "");

/**
 * Where an attempt may connect: refused (a sentence fragment saying why), or the address to
 * connect to. `connectTo` null means the URL as it is: its host is a literal address that passed,
 * or WEBHOOK_ALLOW_PRIVATE skips the guard.
 */
export type TargetCheck = { refused: string } | { connectTo: string | null };

/**
 * Checks a target URL: the literal address, or every address its host name resolves to (one bad
 * address is enough to refuse, since the connection may pick any of them). A name that passes
 * is connected to at the first address just checked (`pinnedRequest`), never resolved again:
 * a name answering a public address to the check and a private one to a second lookup (DNS
 * rebinding) cannot slip past. `allowPrivate` (WEBHOOK_ALLOW_PRIVATE) skips it.
 */
export async function resolveTarget(url: URL, opts: { allowPrivate: boolean; lookup?: Lookup }): Promise<TargetCheck> {
  if (opts.allowPrivate) return { connectTo: null };
  const host = hostOf(url);
  if (ipaddr.isValid(host)) {
    const reason = forbiddenAddressReason(host);
    return reason ? { refused: reason } : { connectTo: null };
  }
  let addresses: string[];
  try {
    addresses = await (opts.lookup ?? systemLookup)(host);
  } catch {
    return { refused: "could not be resolved" };
  }
  if (addresses.length === 0) return { refused: "could not be resolved" };
  for (const a of addresses) {
    const reason = forbiddenAddressReason(a);
    if (reason) return { refused: reason };
  }
  return { connectTo: addresses[0]! };
}

/** resolveTarget's verdict alone: why the URL is refused, or null (create and update validate with it). */
export async function checkTarget(url: URL, opts: { allowPrivate: boolean; lookup?: Lookup }): Promise<string | null> {
  const target = await resolveTarget(url, opts);
  return "refused" in target ? target.refused : null;
}

/**
 * The request that reaches `url` at `address` without looking its name up again: the URL with the
 * address as its host, the `Host` header the URL names, and for https the name the server's
 * certificate must be valid for (and the SNI the server chooses it by).
 */
export function pinnedRequest(url: URL, address: string): { url: string; host: string; serverName: string | null } {
  const pinned = new URL(url.href);
  pinned.hostname = address.includes(":") ? `[${address}]` : address;
  return { url: pinned.href, host: url.host, serverName: url.protocol === "https:" ? url.hostname : null };
}

/** Parses a webhook URL: http or https only, no credentials in it. Returns the URL or a reason. */
export function parseTargetUrl(value: string): URL | string {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return "must be a valid URL";
  }
  // The URL parser drops surrounding whitespace and tabs and line breaks inside: stored as sent,
  // what the console and the API showed would not be where deliveries go.
  if (/[\s\p{Cc}]/u.test(value)) return "must not contain spaces, tabs, line breaks or control characters (percent-encode them)";
  if (url.protocol !== "http:" && url.protocol !== "https:") return "must be an http or https URL";
  if (url.username || url.password) return "must not contain credentials";
  if (!url.hostname) return "must have a host";
  return url;
}
