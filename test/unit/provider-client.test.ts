import { afterAll, expect, test } from "bun:test";
import { type AddressInfo, createServer } from "node:net";
import { createProviderClient } from "../../server/messages/provider-client";

/** A provider whose answers never end: each sends the given opening, then spaces forever (the client waits 60 s, the test 5). */
let answer: { status: number; opening: string } = { status: 200, opening: "" };
const endless = (opening: string) =>
  new ReadableStream({
    start(c) {
      c.enqueue(new TextEncoder().encode(opening));
    },
    pull(c) {
      c.enqueue(new Uint8Array(64 * 1024).fill(32));
    },
  });
const provider = Bun.serve({
  hostname: "127.0.0.1",
  port: 0,
  fetch: () => new Response(endless(answer.opening), { status: answer.status, headers: { "content-type": "application/json" } }),
});
afterAll(() => provider.stop(true));

const client = createProviderClient({ baseUrl: `http://127.0.0.1:${provider.port}`, authToken: "t", timeoutMs: 60_000 });
const message = { id: 1, from: "+15550000001", to: "+15550000002", body: "hi" };

test("an endless acceptance is read up to a bound: the send is accepted, without the sid it never finished", async () => {
  answer = { status: 200, opening: '{"sid":"SM1","status":"queued"' };
  expect(await client.send(message)).toEqual({ kind: "accepted", sid: "", status: "queued" });
});

test("an endless error answer is read up to a bound and reported by its status", async () => {
  answer = { status: 503, opening: "" };
  expect(await client.send(message)).toEqual({ kind: "retry", error: "provider answered 503", retryAfterMs: undefined });
});

test("a sid too long to be any provider's is not kept", async () => {
  const server = Bun.serve({ hostname: "127.0.0.1", port: 0, fetch: () => Response.json({ sid: "S".repeat(10_000), status: "queued" }) });
  try {
    const c = createProviderClient({ baseUrl: `http://127.0.0.1:${server.port}`, authToken: "t" });
    expect(await c.send(message)).toEqual({ kind: "accepted", sid: "", status: "queued" });
    const ok = Bun.serve({ hostname: "127.0.0.1", port: 0, fetch: () => Response.json({ sid: "SM42", status: "sent" }) });
    expect(await createProviderClient({ baseUrl: `http://127.0.0.1:${ok.port}`, authToken: "t" }).send(message)).toEqual({
      kind: "accepted",
      sid: "SM42",
      status: "sent",
    });
    ok.stop(true);
  } finally {
    server.stop(true);
  }
});

test("every attempt of a message carries the same Idempotency-Key, one per message", async () => {
  const keys: (string | null)[] = [];
  const server = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    fetch: (req) => {
      keys.push(req.headers.get("idempotency-key"));
      return Response.json({ message: "busy" }, { status: 503 });
    },
  });
  try {
    const c = createProviderClient({ baseUrl: `http://127.0.0.1:${server.port}`, authToken: "t" });
    await c.send({ ...message, id: 7 });
    await c.send({ ...message, id: 7 });
    await c.send({ ...message, id: 8 });
    expect(keys).toEqual(["simhost-message-7", "simhost-message-7", "simhost-message-8"]);
  } finally {
    server.stop(true);
  }
});

test("a NUL never reaches the database: a sid holding one (or anything but 1-64 letters and digits) is not kept, an error text's is replaced", async () => {
  let reply: Response = new Response();
  const server = Bun.serve({ hostname: "127.0.0.1", port: 0, fetch: () => reply.clone() });
  try {
    const c = createProviderClient({ baseUrl: `http://127.0.0.1:${server.port}`, authToken: "t" });
    for (const sid of ["SM\u0000x", "SM-1", "S".repeat(65), ""]) {
      reply = Response.json({ sid, status: "queued" }, { status: 201 });
      expect([sid, await c.send(message)]).toEqual([sid, { kind: "accepted", sid: "", status: "queued" }]);
    }
    reply = Response.json({ message: "bad \u0000 number" }, { status: 400 });
    expect(await c.send(message)).toEqual({ kind: "rejected", error: "provider answered 400: bad \ufffd number" });
  } finally {
    server.stop(true);
  }
});

test("no answer at all (the connection closed, or a timeout) is a retry whose outcome is unknown; a 5xx is a known refusal", async () => {
  // Takes the request and closes the connection without a word.
  const server = createServer((socket) => socket.once("data", () => socket.destroy()));
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  try {
    const c = createProviderClient({ baseUrl: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, authToken: "t" });
    expect(await c.send(message)).toEqual({ kind: "retry", error: "provider unreachable: connection failed", unknown: true });
  } finally {
    server.close();
  }
  answer = { status: 503, opening: "" };
  expect(await client.send(message)).not.toHaveProperty("unknown");
});

test("a refusal's reason is read from the whole answer, however long its details, and cut to 300 characters", async () => {
  const details = { code: 21211, message: "Invalid 'To' Phone Number", details: "d".repeat(300) };
  const long = { ...details, message: "x".repeat(400) };
  let body: object = details;
  const server = Bun.serve({ hostname: "127.0.0.1", port: 0, fetch: () => Response.json(body, { status: 400 }) });
  try {
    const c = createProviderClient({ baseUrl: `http://127.0.0.1:${server.port}`, authToken: "t" });
    expect(await c.send(message)).toEqual({ kind: "rejected", error: "provider answered 400: Invalid 'To' Phone Number" });
    body = long;
    expect(await c.send(message)).toEqual({ kind: "rejected", error: `provider answered 400: ${"x".repeat(300)}` });
  } finally {
    server.stop(true);
  }
});
