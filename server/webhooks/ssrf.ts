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

/** IPv6 forms that carry an IPv4 address inside; the inner address is what a connection reaches. */
function embeddedIPv4(ip: ipaddr.IPv6): ipaddr.IPv4 | null {
  const range = ip.range();
  if (range === "ipv4Mapped") return ip.toIPv4Address();
  const b = ip.toByteArray();
  if (range === "rfc6052" || range === "rfc6145") return new ipaddr.IPv4(b.slice(12, 16));
  if (range === "6to4") return new ipaddr.IPv4(b.slice(2, 6));
  return null;
}

/**
 * Why an address must not be a webhook target, or null when it is an ordinary public unicast
 * address. Only `unicast` passes: loopback, private, link-local, CGNAT, multicast, broadcast,
 * unspecified, documentation/benchmark/reserved ranges and Teredo are refused, and IPv6 forms
 * embedding an IPv4 address (mapped, NAT64, 6to4) are judged by that address.
 */
export function forbiddenAddressReason(address: string): string | null {
  if (!ipaddr.isValid(address)) return "is not a valid IP address";
  let ip = ipaddr.parse(address);
  if (ip.kind() === "ipv6") {
    const inner = embeddedIPv4(ip as ipaddr.IPv6);
    if (inner) ip = inner;
  }
  const range = ip.range();
  if (range === "unicast") return null;
  return `resolves to ${READABLE[range] ?? "a reserved"} address (${ip.toString()})`;
}

const hostOf = (url: URL) => url.hostname.replace(/^\[|\]$/g, "");

/**
 * Checks a target URL: the literal address, or every address its host name resolves to (one bad
 * address is enough to refuse, since the connection may pick any of them). Returns a sentence
 * fragment saying why it is refused, or null. `allowPrivate` (WEBHOOK_ALLOW_PRIVATE) skips it.
 */
export async function checkTarget(url: URL, opts: { allowPrivate: boolean; lookup?: Lookup }): Promise<string | null> {
  if (opts.allowPrivate) return null;
  const host = hostOf(url);
  if (ipaddr.isValid(host)) return forbiddenAddressReason(host);
  let addresses: string[];
  try {
    addresses = await (opts.lookup ?? systemLookup)(host);
  } catch {
    return "could not be resolved";
  }
  if (addresses.length === 0) return "could not be resolved";
  for (const a of addresses) {
    const reason = forbiddenAddressReason(a);
    if (reason) return reason;
  }
  return null;
}

/** Parses a webhook URL: http or https only, no credentials in it. Returns the URL or a reason. */
export function parseTargetUrl(value: string): URL | string {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return "must be a valid URL";
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") return "must be an http or https URL";
  if (url.username || url.password) return "must not contain credentials";
  if (!url.hostname) return "must have a host";
  return url;
}
