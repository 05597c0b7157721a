import { describe, expect, test } from "bun:test";
import { acceptsCallbackFrom } from "../../server/provider/signature";

// Address classification only: nothing here connects anywhere.
describe("provider callbacks signed with the development token come from this machine only", () => {
  test("loopback (IPv4, IPv6, IPv4-mapped) and in-process requests are judged by their signature; any other address is refused", () => {
    for (const address of ["127.0.0.1", "127.8.9.10", "::1", "::ffff:127.0.0.1", "local"])
      expect([address, acceptsCallbackFrom(address, true)]).toEqual([address, true]);
    for (const address of ["192.0.2.10", "10.1.2.3", "172.16.0.9", "fe80::1", "2001:db8::5", "::ffff:192.0.2.10", "not an address", ""])
      expect([address, acceptsCallbackFrom(address, true)]).toEqual([address, false]);
  });

  test("with a token of the operator's own, every address is judged by its signature", () => {
    for (const address of ["192.0.2.10", "2001:db8::5", "127.0.0.1", "local"]) expect(acceptsCallbackFrom(address, false)).toBe(true);
  });
});
