import { describe, expect, test } from "bun:test";
import { brotliCompressSync } from "node:zlib";
import { postWebhook, RESPONSE_BODY_LIMIT } from "../../server/webhooks/http";
import { checkTarget, forbiddenAddressReason, parseTargetUrl, pinnedRequest, resolveTarget } from "../../server/webhooks/ssrf";

describe("SSRF guard: address classes", () => {
  test.each([
    ["127.0.0.1", "loopback"],
    ["127.255.0.9", "loopback"],
    ["10.0.0.1", "private"],
    ["172.16.5.4", "private"],
    ["192.168.1.1", "private"],
    ["169.254.169.254", "link-local"],
    ["100.64.0.1", "carrier-grade NAT"],
    ["224.0.0.1", "multicast"],
    ["255.255.255.255", "broadcast"],
    ["0.0.0.0", "unspecified"],
    ["::1", "loopback"],
    ["::", "unspecified"],
    ["fe80::1", "link-local"],
    ["fc00::1", "private"],
    ["fd12:3456::1", "private"],
    ["ff02::1", "multicast"],
    ["::ffff:127.0.0.1", "loopback"],
    ["::ffff:10.1.2.3", "private"],
    ["64:ff9b::a9fe:a9fe", "link-local"],
    ["2002:7f00:1::", "loopback"],
    ["192.0.2.1", "reserved"],
    ["2001:db8::1", "reserved"],
  ])("%s is refused (%s)", (address, kind) => {
    expect(forbiddenAddressReason(address)).toContain(kind);
  });

  test.each(["8.8.8.8", "1.1.1.1", "2606:4700:4700::1111", "::ffff:8.8.8.8", "64:ff9b::808:808", "2002:808:808::1", "::ffff:0:808:808"])(
    "%s is allowed",
    (address) => {
      expect(forbiddenAddressReason(address)).toBeNull();
    },
  );
});

describe("SSRF guard: IPv6 forms carrying an IPv4 address are judged by what they carry", () => {
  test.each([
    // IPv4-compatible (::/96, deprecated): the forms that used to pass.
    ["::127.0.0.1", "loopback"],
    ["::7f00:1", "loopback"],
    ["0:0:0:0:0:0:7f00:1", "loopback"],
    ["::a00:1", "private"],
    ["::a9fe:a9fe", "link-local"],
    ["::c000:201", "reserved"],
    ["::2", "unspecified"],
    // IPv4-mapped, in both spellings, and SIIT.
    ["::ffff:7f00:1", "loopback"],
    ["::ffff:192.168.0.1", "private"],
    ["::ffff:0:7f00:1", "loopback"],
    ["::ffff:0:a9fe:a9fe", "link-local"],
    // NAT64, well-known and local-use prefixes.
    ["64:ff9b::127.0.0.1", "loopback"],
    ["64:ff9b::a00:1", "private"],
    ["64:ff9b:1::7f00:1", "loopback"],
    ["64:ff9b:1::c0a8:1", "private"],
    // 6to4 and Teredo (server address, and the client address XOR-ed).
    ["2002:a9fe:a9fe::1", "link-local"],
    ["2002:c0a8:101::", "private"],
    ["2001:0:7f00:1::", "loopback"],
    ["2001:0:808:808::80ff:fffe", "loopback"],
    ["2001:0:4136:e378:8000:63bf:3fff:fdd2", "reserved"],
  ])("%s is refused (%s)", (address, kind) => {
    expect(forbiddenAddressReason(address)).toContain(kind);
  });

  test.each([
    ["::8.8.8.8", "IPv4-compatible"],
    ["64:ff9b:1::808:808", "local-use NAT64"],
    ["2001:0:808:808::f7f7:f7f7", "Teredo"],
  ])("%s is refused as a form, even carrying a public address (%s)", (address, kind) => {
    expect(forbiddenAddressReason(address)).toContain(kind);
  });

  test("every spelling of an embedded loopback is refused by URL too, at create, update and send alike", async () => {
    for (const url of ["http://[::127.0.0.1]/", "http://[::7f00:1]/", "http://[::ffff:7f00:1]/", "http://[64:ff9b::7f00:1]/", "http://[2002:7f00:1::]/"]) {
      // Literal addresses are classified without any lookup or connection.
      const lookup = async () => Promise.reject(new Error("no lookup expected"));
      expect(await checkTarget(new URL(url), { allowPrivate: false, lookup })).toContain("loopback");
    }
  });
});

describe("SSRF guard: targets", () => {
  const guarded = { allowPrivate: false, lookup: async (host: string) => (host === "inside.example" ? ["93.184.216.34", "10.0.0.7"] : ["93.184.216.34"]) };

  test("literal addresses in every URL spelling are judged by the address they reach", async () => {
    for (const url of [
      "http://127.0.0.1/",
      "http://[::ffff:127.0.0.1]/",
      "http://2130706433/",
      "http://0x7f.1/",
      "http://[::1]:8080/x",
      "http://169.254.169.254/latest",
    ]) {
      expect(await checkTarget(new URL(url), guarded)).not.toBeNull();
    }
  });

  test("a host name is refused when any of its addresses is internal", async () => {
    expect(await checkTarget(new URL("https://inside.example/hook"), guarded)).toContain("private");
    expect(await checkTarget(new URL("https://public.example/hook"), guarded)).toBeNull();
  });

  test("a host name that resolves to loopback through the system resolver is refused", async () => {
    expect(await checkTarget(new URL("http://localhost:9/"), { allowPrivate: false })).toContain("loopback");
  });

  test("an unresolvable host is refused, and WEBHOOK_ALLOW_PRIVATE skips every check", async () => {
    const failing = { allowPrivate: false, lookup: async () => Promise.reject(new Error("ENOTFOUND")) };
    expect(await checkTarget(new URL("https://nowhere.invalid/"), failing)).toBe("could not be resolved");
    expect(await checkTarget(new URL("http://127.0.0.1/"), { allowPrivate: true })).toBeNull();
  });

  test("a host name that passes is connected to at the address just checked, never looked up again (DNS rebinding)", async () => {
    let lookups = 0;
    const rebinding = { allowPrivate: false, lookup: async () => (++lookups === 1 ? ["93.184.216.34"] : ["127.0.0.1"]) };
    expect(await resolveTarget(new URL("https://rebind.example/hook"), rebinding)).toEqual({ connectTo: "93.184.216.34" });
    expect(lookups).toBe(1);
    // Literal addresses are connected to as written; WEBHOOK_ALLOW_PRIVATE connects as written too.
    expect(await resolveTarget(new URL("http://93.184.216.34:8080/x"), guarded)).toEqual({ connectTo: null });
    expect(await resolveTarget(new URL("http://localhost:9/"), { allowPrivate: true })).toEqual({ connectTo: null });
  });

  test("the pinned request keeps the URL's Host and, for https, the name the certificate must match", () => {
    expect(pinnedRequest(new URL("http://hooks.example.com:8080/in?x=1"), "93.184.216.34")).toEqual({
      url: "http://93.184.216.34:8080/in?x=1",
      host: "hooks.example.com:8080",
      serverName: null,
    });
    expect(pinnedRequest(new URL("https://hooks.example.com/in"), "2606:4700:4700::1111")).toEqual({
      url: "https://[2606:4700:4700::1111]/in",
      host: "hooks.example.com",
      serverName: "hooks.example.com",
    });
  });

  test("only http(s) URLs without credentials parse", () => {
    expect(parseTargetUrl("ftp://example.com/")).toBe("must be an http or https URL");
    expect(parseTargetUrl("https://user:pw@example.com/")).toBe("must not contain credentials");
    expect(parseTargetUrl("not a url")).toBe("must be a valid URL");
    for (const spaced of [" https://example.com/", "https://example.com/a\nb", "https://exa\tmple.com/"])
      expect(parseTargetUrl(spaced)).toStartWith("must not contain spaces");
    expect(parseTargetUrl("https://example.com/hook")).toBeInstanceOf(URL);
  });
});

describe("a POST goes to the address the guard checked", () => {
  test("the name is not looked up again: a name no resolver knows is reached at the given address, with its Host", async () => {
    const seen: { host: string | null; body: string }[] = [];
    const server = Bun.serve({
      port: 0,
      hostname: "127.0.0.1",
      fetch: async (req) => {
        seen.push({ host: req.headers.get("host"), body: await req.text() });
        return new Response("ok");
      },
    });
    try {
      // `.test` names resolve nowhere (RFC 6761): only the pinned address can have been reached.
      const url = `http://hooks.example.test:${server.port}/hook`;
      const reached = await postWebhook({ url, headers: {}, body: '{"n":1}', timeoutMs: 5_000, connectTo: "127.0.0.1" });
      expect(reached).toMatchObject({ ok: true, httpStatus: 200, responseBody: "ok" });
      expect(seen).toEqual([{ host: `hooks.example.test:${server.port}`, body: '{"n":1}' }]);
    } finally {
      server.stop(true);
    }
  });

  test("an answer is read as sent, at most 4 KiB: no encoding is asked for, and a compressed one is not decoded (a few hundred bytes of brotli can be gigabytes)", async () => {
    const huge = brotliCompressSync(Buffer.alloc(64 * 1024 * 1024, 97));
    const asked: (string | null)[] = [];
    const server = Bun.serve({
      port: 0,
      hostname: "127.0.0.1",
      fetch: (req) => {
        asked.push(req.headers.get("accept-encoding"));
        return new URL(req.url).pathname === "/bomb"
          ? new Response(huge, { headers: { "content-encoding": "br", "content-length": String(huge.byteLength) } })
          : new Response("y".repeat(10_000));
      },
    });
    try {
      const post = (path: string) => postWebhook({ url: `http://127.0.0.1:${server.port}${path}`, headers: {}, body: "{}", timeoutMs: 5_000 });
      const bomb = await post("/bomb");
      expect(bomb).toMatchObject({ ok: true, httpStatus: 200, responseBody: "(a body in content-encoding br, not read)" });
      expect((await post("/plain")).responseBody).toBe("y".repeat(RESPONSE_BODY_LIMIT));
      expect(asked).toEqual([null, null]);
    } finally {
      server.stop(true);
    }
  });
});
