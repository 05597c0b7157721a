import { beforeAll, describe, expect, test } from "bun:test";
import { processDeviceSms } from "../../server/devices/sms-process";
import { createTenant } from "../fixtures";
import { activeDevice, registerDevice, smsBody } from "../fixtures-devices";
import { createSharedNumber, randomNumber } from "../fixtures-numbers";
import { expectErrorShape, sharedTestContext, type TestContext } from "../helpers";

/**
 * Issue 15 items 4, 9 and 11: what real clients send. Lengths count characters (code points),
 * `null` for an optional field is accepted, and a body of the wrong media type or shape gets an
 * answer that says so.
 */
let ctx: TestContext;
let token: string;
let orgId: number;
beforeAll(async () => {
  ctx = await sharedTestContext();
  const tenant = await createTenant(ctx.sql, { plan: "enterprise" });
  token = tenant.token;
  orgId = tenant.org.id;
});

const raw = (method: string, path: string, body: string, contentType: string | null, bearer = token) =>
  ctx.request(method, path, { token: bearer, body, headers: contentType ? { "content-type": contentType } : {} });

describe("characters are code points", () => {
  test("an SMS body of 1600 emoji is accepted and stored whole; 1601 are refused as more than 1600 characters", async () => {
    const { device } = await activeDevice(ctx, token);
    const text = "😀".repeat(1600);
    const ok = await ctx.request("POST", `/api/byos/devices/${device.id}/sms`, { token, body: smsBody({ body: text }) });
    expect(ok.status).toBeLessThan(300);
    expect(ok.status).toBe(202);
    await ctx.services.devices.settle();
    await processDeviceSms(ctx.sql, [{ device_id: device.id }]);
    const [stored] = await ctx.sql<{ n: number }[]>`select length(text)::int as n from messages where device_id = ${device.id}`;
    expect(stored?.n).toBe(1600);
    const over = await ctx.request("POST", `/api/byos/devices/${device.id}/sms`, { token, body: smsBody({ body: "😀".repeat(1601) }) });
    expect(over.status).toBe(422);
    expect(over.body.errors).toEqual({ body: ["must be at most 1600 characters"] });
  });

  test("names count emoji, CJK and combining marks one code point each", async () => {
    for (const [name, status] of [
      ["😀".repeat(255), 201],
      ["漢".repeat(255), 201],
      ["e\u0301".repeat(127), 201], // 254 code points, 127 visible letters
      ["😀".repeat(256), 422],
      ["e\u0301".repeat(128), 422], // 256 code points
    ] as const) {
      const res = await ctx.request("POST", "/api/teams", { token, body: { name } });
      expect([name.slice(0, 4), res.status]).toEqual([name.slice(0, 4), status]);
      if (status === 201) expect(res.body.data.name).toBe(name);
      else expect(res.body.errors).toEqual({ name: ["must be at most 255 characters"] });
    }
  });

  test("a lone surrogate is refused: PostgreSQL text cannot hold it", async () => {
    const res = await raw("POST", "/api/teams", '{"name":"a\\ud800b"}', "application/json");
    expect(res.status).toBe(422);
    expectErrorShape(res.body, "validation_failed");
    expect(res.body.errors).toEqual({ name: ["must be valid Unicode text (it holds a lone surrogate)"] });
  });

  test("a query text bound counts code points too", async () => {
    const ok = await ctx.request("GET", `/api/messages?hosted_sim=1&q=${encodeURIComponent("😀".repeat(200))}`, { token });
    expect(ok.body?.errors?.q).toBeUndefined();
    const over = await ctx.request("GET", `/api/messages?hosted_sim=1&q=${encodeURIComponent("😀".repeat(201))}`, { token });
    expect(over.body.errors?.q).toEqual(["must be at most 200 characters"]);
  });
});

describe("null for an optional field", () => {
  test("heartbeat battery_level: null, registration device_name: null, webhook timeout_seconds: null are accepted as not sent", async () => {
    const device = await registerDevice(ctx, token);
    const beat = await ctx.request("POST", `/api/byos/devices/${device.id}/heartbeat`, {
      token,
      body: { battery_level: null, signal_strength: null, is_in_doze_mode: null, sim_cards: null },
    });
    expect(beat.status).toBe(200);
    const registered = await ctx.request("POST", "/api/byos/devices/register", {
      token,
      body: { android_id: "00112233445566ff", sim_slots: [1], device_model: "Pixel 8", app_version: "1.0", device_name: null },
    });
    expect(registered.status).toBe(201);
    const hook = await ctx.request("POST", "/api/webhook-integrations", {
      token,
      body: { name: "kotlin", url: "https://example.com/hook", headers: null, timeout_seconds: null, retry_count: null },
    });
    expect(hook.status).toBe(201);
    expect(hook.body.data).toMatchObject({ timeout_seconds: 30, retry_count: 3, headers: {} });
  });

  test("every optional body field of the document is nullable and says what null means; sending null is never refused for it", async () => {
    const doc = (await ctx.request("GET", "/openapi.json")).body;
    const failures: string[] = [];
    let tried = 0;
    for (const [path, ops] of Object.entries(doc.paths as Record<string, Record<string, any>>)) {
      for (const [method, op] of Object.entries(ops)) {
        const schema = op.requestBody?.content?.["application/json"]?.schema;
        if (!schema?.properties) continue;
        for (const [name, field] of Object.entries(schema.properties as Record<string, any>)) {
          if (schema.required?.includes(name)) continue;
          tried++;
          if (field.nullable !== true || !["absent", "clears"].includes(field["x-null-means"]))
            failures.push(`${method} ${path} ${name}: not documented as nullable`);
          // null must answer what leaving the field out answers ("absent"), or be a value ("clears").
          const target = path.replace(/\{[^}]+\}/g, "1");
          const withNull = await ctx.request(method.toUpperCase(), target, { token, body: { [name]: null } });
          const without = field["x-null-means"] === "clears" ? undefined : await ctx.request(method.toUpperCase(), target, { token, body: {} });
          const [got, want] = [withNull.body?.errors?.[name], without?.body?.errors?.[name]];
          if (JSON.stringify(got) !== JSON.stringify(want)) failures.push(`${method} ${path} ${name}: ${JSON.stringify(got)}`);
        }
      }
    }
    expect(tried).toBeGreaterThan(30);
    expect(failures).toEqual([]);
  });
});

describe("body shapes", () => {
  test("JSON sent as text/plain, form data or without a content type answers 415 unsupported_media_type", async () => {
    const json = JSON.stringify({ name: "sent as text" });
    for (const type of ["text/plain", "application/x-www-form-urlencoded", "application/xml"]) {
      const res = await raw("POST", "/api/teams", json, type);
      expect([type, res.status]).toEqual([type, 415]);
      expectErrorShape(res.body, "unsupported_media_type");
    }
    const form = await ctx.request("POST", "/api/teams", { token, form: { name: "form" } });
    expect(form.status).toBe(415);
    const multipart = new FormData();
    multipart.set("name", "form");
    const res = await ctx.app.handle(
      new Request("http://localhost:3000/api/teams", { method: "POST", headers: { authorization: `Bearer ${token}` }, body: multipart }),
    );
    expect(res.status).toBe(415);
    const untyped = await ctx.app.handle(
      new Request("http://localhost:3000/api/teams", {
        method: "POST",
        headers: { authorization: `Bearer ${token}`, "content-length": String(json.length) },
        body: new TextEncoder().encode(json),
      }),
    );
    expect(untyped.headers.get("content-type")).toContain("application/json");
    expect([untyped.status, ((await untyped.json()) as { code: string }).code]).toEqual([415, "unsupported_media_type"]);
    const [{ n }] = (await ctx.sql`select count(*)::int as n from teams where name in ('sent as text', 'form')`) as unknown as [{ n: number }];
    expect(n).toBe(0);
  });

  test("a compressed body (Content-Encoding) answers 415 naming identity, after authorization; identity is taken", async () => {
    const json = JSON.stringify({ name: "sent gzipped" });
    const gzipped = Bun.gzipSync(new TextEncoder().encode(json));
    const send = (body: Uint8Array<ArrayBuffer> | string, coding: string, bearer: string | null = token) => {
      const bytes = typeof body === "string" ? new TextEncoder().encode(body) : body;
      return ctx.app.handle(
        new Request("http://localhost:3000/api/teams", {
          method: "POST",
          headers: {
            "content-type": "application/json",
            "content-encoding": coding,
            "content-length": String(bytes.byteLength),
            ...(bearer ? { authorization: `Bearer ${bearer}` } : {}),
          },
          body: bytes,
        }),
      );
    };
    // Really compressed (unparseable as JSON), and labelled compressed but sent plain: the label decides.
    for (const [label, res] of [
      ["gzip bytes", await send(gzipped, "gzip")],
      ["plain JSON labelled br", await send(json, "br")],
    ] as const) {
      expect([label, res.status, res.headers.get("accept-encoding")]).toEqual([label, 415, "identity"]);
      expectErrorShape(await res.json(), "unsupported_media_type");
    }
    expect((await send(gzipped, "gzip", null)).status).toBe(401);
    const [{ n }] = (await ctx.sql`select count(*)::int as n from teams where name = 'sent gzipped'`) as unknown as [{ n: number }];
    expect(n).toBe(0);
    expect((await send(JSON.stringify({ name: "sent as identity" }), "identity")).status).toBe(201);
  });

  test("application/json with parameters is JSON; the routes that take form data still do", async () => {
    expect((await raw("POST", "/api/teams", JSON.stringify({ name: "charset" }), "application/json; charset=utf-8")).status).toBe(201);
    // pusher-js posts channel authorization form encoded: a 403 for the channel, not a 415.
    const auth = await ctx.request("POST", "/api/broadcasting/auth", {
      token,
      form: { socket_id: "1234.5678", channel_name: "private-organization.999999999" },
    });
    expect(auth.status).toBe(403);
  });

  test("authorization still comes first: no token with a text/plain body is 401", async () => {
    const res = await raw("POST", "/api/teams", "{}", "text/plain", "");
    expect(res.status).toBe(401);
  });

  test("[], null and 5 as the body answer 'the body must be a JSON object'", async () => {
    for (const body of ["[]", "null", "5", '"text"']) {
      for (const path of ["/api/teams", `/api/numbers/1/lock`]) {
        const res = await raw("POST", path, body, "application/json");
        expect([body, path, res.status]).toEqual([body, path, 422]);
        expect(res.body.message).toBe("The body must be a JSON object.");
        expect(res.body.errors).toEqual({ body: ["must be a JSON object"] });
      }
    }
  });

  test("a body nested deeper than 32 levels answers 422 naming its field, however deep (30,000 levels in 60 KB); 32 levels go on to validation", async () => {
    const nested = (levels: number) => "[".repeat(levels) + "]".repeat(levels);
    const message = "must not nest objects and arrays more than 32 levels deep";
    for (const [body, field] of [
      [`{"email":"a@example.com","password":${nested(30_000)}}`, "password"],
      [`{"email":"a@example.com","password":"x","extra":${'{"a":'.repeat(10_000)}1${"}".repeat(10_000)}}`, "extra"],
      [`{"email":"a@example.com","password":${nested(32)}}`, "password"],
      [nested(30_000), "body"],
    ]) {
      const res = await raw("POST", "/api/auth/login", body!, "application/json", "");
      expect([field, res.status, res.body.errors]).toEqual([field, 422, { [field!]: [message] }]);
      expectErrorShape(res.body, "validation_failed");
    }
    // 32 levels in all (the body, then 31 in the field): the field's own rule answers.
    const deepest = await raw("POST", "/api/auth/login", `{"email":"a@example.com","password":${nested(31)}}`, "application/json", "");
    expect(deepest.status).toBe(422);
    expect(deepest.body.errors.password).not.toContain(message);
    // Authorization still comes first.
    expect((await raw("POST", "/api/teams", `{"name":${nested(30_000)}}`, "application/json", "")).status).toBe(401);
  });

  test('sim_cards: "abc" is not three items: "must be an array"', async () => {
    const device = await registerDevice(ctx, token);
    const res = await ctx.request("POST", `/api/byos/devices/${device.id}/heartbeat`, { token, body: { sim_cards: "abc" } });
    expect(res.status).toBe(422);
    expect(res.body.errors).toEqual({ sim_cards: ["must be an array"] });
  });

  test("an array where an object belongs, at any depth, is 'must be an object' (it was copied into an object: a header named 0, an empty SIM card), an object where an array belongs 'must be an array'", async () => {
    const device = await registerDevice(ctx, token);
    const heartbeat = await ctx.request("POST", `/api/byos/devices/${device.id}/heartbeat`, { token, body: { sim_cards: [["+15550100", 3]] } });
    expect(heartbeat.status).toBe(422);
    expect(heartbeat.body.errors).toEqual({ "sim_cards.0": ["must be an object"] });
    // And the other way round: an object where a list belongs was read as a list of its values.
    for (const sim_cards of [{}, { "0": { phone_number: "+15550100", signal_strength: 3 } }]) {
      const res = await ctx.request("POST", `/api/byos/devices/${device.id}/heartbeat`, { token, body: { sim_cards } });
      expect([sim_cards, res.status, res.body.errors]).toEqual([sim_cards, 422, { sim_cards: ["must be an array"] }]);
    }
    const sim = await createSharedNumber(ctx.sql, [orgId]);
    const send = await ctx.request("POST", "/api/messages", {
      token,
      body: {
        hosted_sim: sim.id,
        text: "Hi {{name}}",
        to: [
          { to: randomNumber(), vars: { name: "Ada" } },
          { to: randomNumber(), vars: ["Bob"] },
        ],
      },
    });
    expect(send.status).toBe(422);
    expectErrorShape(send.body, "validation_failed");
    expect(send.body.errors).toEqual({ "to.1.vars": ["must be an object"] });
    // Arrays where arrays belong are untouched, and authorization still comes first.
    expect((await ctx.request("POST", `/api/byos/devices/${device.id}/heartbeat`, { token, body: { sim_cards: [] } })).status).toBe(200);
    expect((await ctx.request("POST", "/api/webhook-integrations", { body: { name: "x", url: "http://127.0.0.1:9/", headers: [] } })).status).toBe(401);
  });

  test("per_page=1.5 must be an integer; out of range names the bound", async () => {
    for (const [value, message] of [
      ["1.5", "must be an integer"],
      ["abc", "must be an integer"],
      ["1e2", "must be an integer"],
      ["0", "must be at least 1"],
      ["-1", "must be at least 1"],
      ["-0", "must be at least 1"],
      ["101", "must be at most 100"],
    ]) {
      const res = await ctx.request("GET", `/api/byos/devices?per_page=${value}`, { token });
      expect([value, res.body.errors]).toEqual([value, { per_page: [message] }]);
    }
  });

  test("the document lists application/json alone for JSON bodies, and 415 beside them", async () => {
    const doc = (await ctx.request("GET", "/openapi.json")).body;
    const teams = doc.paths["/api/teams"].post;
    expect(Object.keys(teams.requestBody.content)).toEqual(["application/json"]);
    expect(teams.responses["415"]).toBeDefined();
    const auth = doc.paths["/api/broadcasting/auth"].post;
    expect(Object.keys(auth.requestBody.content).sort()).toEqual(["application/json", "application/x-www-form-urlencoded"]);
  });
});
