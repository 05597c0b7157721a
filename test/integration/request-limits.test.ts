import { beforeAll, describe, expect, test } from "bun:test";
import { createTenant } from "../fixtures";
import { expectErrorShape, readResponse, sharedTestContext, type TestContext } from "../helpers";

/** Request body and header limits (MAX_BODY_BYTES, MAX_HEADER_BYTES), in-process. */
let ctx: TestContext;
let token: string;

beforeAll(async () => {
  ctx = await sharedTestContext();
  token = (await createTenant(ctx.sql, { plan: "pro" })).token;
});

const encoder = new TextEncoder();

/** The bytes as a stream of 4 KiB chunks, as a chunked upload arrives: no Content-Length. */
function streamed(text: string): ReadableStream<Uint8Array> {
  const bytes = encoder.encode(text);
  let offset = 0;
  return new ReadableStream({
    pull(controller) {
      if (offset >= bytes.length) return controller.close();
      controller.enqueue(bytes.subarray(offset, offset + 4096));
      offset += 4096;
    },
  });
}

type Shape = "content-length" | "no content-length" | "stream";

function send(path: string, text: string, type: string, shape: Shape, headers: Record<string, string> = {}) {
  const body = shape === "stream" ? streamed(text) : text;
  const all: Record<string, string> = { "content-type": type, authorization: `Bearer ${token}`, ...headers };
  if (shape === "content-length") all["content-length"] = String(encoder.encode(text).length);
  return ctx.app.handle(new Request(`http://localhost:3000${path}`, { method: "POST", body, headers: all, duplex: "half" } as RequestInit)).then(readResponse);
}

const overJson = JSON.stringify({ email: "a@b.co", password: "p".repeat(70 * 1024), name: "n".repeat(10) });
const overForm = `From=%2B15550001111&To=%2B15005550006&Body=${"b".repeat(70 * 1024)}&MessageSid=SM1`;
const SHAPES: Shape[] = ["content-length", "no content-length", "stream"];

describe("request bodies over MAX_BODY_BYTES (64 KiB)", () => {
  for (const path of ["/api/auth/login", "/api/teams", "/api/provider/sms", "/oauth/token"]) {
    for (const shape of SHAPES) {
      test(`${path}: JSON and form bodies, ${shape} → 413 payload_too_large`, async () => {
        const bodies = [
          [overJson, "application/json"],
          [overForm, "application/x-www-form-urlencoded"],
        ] as const;
        // The token endpoint refuses anything but a form before reading it (RFC 6749 400).
        for (const [text, type] of path === "/oauth/token" ? bodies.slice(1) : bodies) {
          const res = await send(path, text, type, shape);
          expect(res.status).toBe(413);
          expectErrorShape(res.body, "payload_too_large");
        }
      });
    }
  }

  test("the limit is refused before authentication: no token, a wrong token, the same 413", async () => {
    for (const authorization of ["", "Bearer st_not-a-token"]) {
      const res = await send("/api/teams", overJson, "application/json", "content-length", { authorization });
      expect(res.status).toBe(413);
    }
  });

  test("bodies within the limit still work, streamed or not", async () => {
    for (const shape of SHAPES) {
      const res = await send("/api/teams", JSON.stringify({ name: `team ${shape}` }), "application/json", shape);
      expect(res.status).toBe(201);
      expect(res.body.data.name).toBe(`team ${shape}`);
    }
  });

  test("a body exactly at the limit passes the limit (and is then judged by the route)", async () => {
    const name = "n".repeat(64 * 1024 - '{"name":""}'.length);
    const res = await send("/api/teams", JSON.stringify({ name }), "application/json", "stream");
    expect(res.status).toBe(422); // name is longer than 255: the route saw the body
  });

  test("the limit follows MAX_BODY_BYTES", async () => {
    const { createTestContext } = await import("../helpers");
    const small = await createTestContext({ MAX_BODY_BYTES: "2048" });
    try {
      const res = await small.request("POST", "/api/auth/login", { body: { email: "a@b.co", password: "p".repeat(3000) } });
      expect(res.status).toBe(413);
      expect(res.body.message).toContain("2 KiB");
    } finally {
      await small.close();
    }
  });
});

describe("request headers over MAX_HEADER_BYTES (16 KiB)", () => {
  test("a 60 KB Authorization header → 413 payload_too_large in the error shape (API.md §1)", async () => {
    const res = await ctx.request("GET", "/api/me", { headers: { authorization: `Bearer ${"x".repeat(60_000)}` } });
    expect(res.status).toBe(413);
    expectErrorShape(res.body, "payload_too_large");
  });

  test("many headers adding up past the limit, on any route, even unknown ones", async () => {
    const headers: Record<string, string> = {};
    for (let i = 0; i < 40; i++) headers[`x-filler-${i}`] = "f".repeat(500);
    for (const [method, path] of [
      ["GET", "/api/numbers"],
      ["POST", "/api/auth/login"],
      ["GET", "/no/such/route"],
    ] as const) {
      const res = await ctx.request(method, path, { headers, body: method === "POST" ? {} : undefined });
      expect(res.status).toBe(413);
      expectErrorShape(res.body, "payload_too_large");
    }
  });

  test("the URL counts with the headers: a 20 KB query or path → 413, before routing", async () => {
    for (const path of [`/api/me?pad=${"q".repeat(20_000)}`, `/api/${"p".repeat(20_000)}`]) {
      const res = await ctx.request("GET", path, { token });
      expect(res.status).toBe(413);
      expectErrorShape(res.body, "payload_too_large");
      expect(res.body.message).toContain("URL and headers");
    }
    expect((await ctx.request("GET", `/api/me?pad=${"q".repeat(8_000)}`, { token })).status).toBe(200);
  });

  test("ordinary headers pass", async () => {
    const res = await ctx.request("GET", "/api/me", { token, headers: { "x-note": "n".repeat(4000) } });
    expect(res.status).toBe(200);
  });
});

describe("the OpenAPI document shows the limits", () => {
  test("413 on every operation (bodies and headers)", async () => {
    const doc = (await ctx.request("GET", "/openapi.json")).body;
    let withBody = 0;
    for (const item of Object.values<Record<string, { requestBody?: unknown; responses: Record<string, unknown> }>>(doc.paths)) {
      for (const [method, op] of Object.entries(item)) {
        if (!["get", "post", "put", "patch", "delete"].includes(method)) continue;
        expect(op.responses["413"]).toBeDefined();
        if (op.requestBody) {
          withBody++;
        }
      }
    }
    expect(withBody).toBeGreaterThan(10);
  });
});
