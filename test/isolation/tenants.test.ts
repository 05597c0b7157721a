import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type Pusher from "pusher-js";
import { createAdmin } from "../../server/admin/operations";
import { appendEvents } from "../../server/events/log";
import { signChannel } from "../../server/realtime/protocol";
import { type ConnectionDetails, connected, connectPusher, openRaw, startServer, stopServer, subscribed } from "../e2e/realtime-client";
import { eventually } from "../fixtures-numbers";
import { createTestContext, type RequestOptions, type TestContext } from "../helpers";
import { seedEvents, tenantEvents } from "./events";
import { bodyFor, forEachLimit, foreignFindings, idsFor, loadOperations, type Operation, pathsFor } from "./probe";
import { buildBridge, buildWorld, credentialsOf, secretsOf, sendSharedMessages, type Tenant, type World } from "./world";

/**
 * Tenant isolation (issue 9, item 3): two organizations with full data; every route of the
 * OpenAPI document called by each with the other's ids, with a session of every role and an API
 * key of every permission set; no foreign data in any body, realtime event or webhook. With
 * PostgreSQL and Redis the requests alternate between two instances (issue 14).
 */
let ctx: TestContext & { baseUrl: string; port: number };
/**
 * With PostgreSQL and Redis, a second instance on the same database and bus answers every other
 * request, so the probes also cross instances (caches, revocations and grants kept per instance).
 */
let second: TestContext | undefined;
let turn = 0;
const request = (method: string, path: string, opts?: RequestOptions) => (second && turn++ % 2 ? second : ctx).request(method, path, opts);
let ops: Operation[];
let world: World;
type Probed = Tenant & { messageIds: number[]; events: { channel: string; event: string; data: string }[]; pusher: Pusher };
let a: Probed;
let b: Probed;

// invalid_signature: the provider's callbacks take no tenant credential, only the provider's signature.
const DENIED_403 = new Set(["permission_denied", "api_key_not_allowed", "invalid_signature"]);
const others = (t: Tenant) => ({ strings: secretsOf(t), orgIds: [t.org.id] });

async function messageTexts(t: Tenant, simId: number): Promise<string[]> {
  const res = await request("GET", `/api/messages?hosted_sim=${simId}&per_page=100`, { token: t.users.owner.token });
  return res.status === 200 ? res.body.data.map((m: { text: string }) => m.text) : [];
}

beforeAll(async () => {
  const started = performance.now();
  ctx = await startServer();
  ctx.services.start();
  if (process.env.DATABASE_URL && process.env.REDIS_URL)
    second = await createTestContext({ DATABASE_URL: ctx.config.DATABASE_URL!, REDIS_PREFIX: ctx.config.REDIS_PREFIX, PUBLIC_URL: ctx.baseUrl });
  ops = await loadOperations(ctx);
  world = await buildWorld(ctx);
  const details = (await request("GET", "/api/broadcasting/connection", { token: world.a.users.owner.token })).body as ConnectionDetails;
  for (const t of [world.a, world.b]) {
    const probed = Object.assign(t, {
      messageIds: [] as number[],
      events: [] as Probed["events"],
      pusher: connectPusher(ctx.baseUrl, details, t.users.owner.token),
    });
    probed.pusher.bind_global((event: string, data: unknown) => probed.events.push({ channel: "", event, data: JSON.stringify(data) }));
    await connected(probed.pusher);
    for (const channel of [`private-organization.${t.org.id}`, `private-team.${t.team.id}`, `private-number.${world.shared.id}`]) {
      const ch = await subscribed(probed.pusher, channel);
      ch.bind_global((event: string, data: unknown) => probed.events.push({ channel, event, data: JSON.stringify(data) }));
    }
  }
  [a, b] = [world.a as Probed, world.b as Probed];
  if (process.env.ISOLATION_TIMING) console.log(`world built in ${Math.round(performance.now() - started)} ms`);
  await sendSharedMessages(ctx, world);
  await seedEvents(ctx, world);
  const { open, locked, after } = world.texts;
  await eventually(
    async () => {
      const [seenA, seenB, byosA, byosB] = await Promise.all([
        messageTexts(a, world.shared.id),
        messageTexts(b, world.shared.id),
        messageTexts(a, a.byosSim.id),
        messageTexts(b, b.byosSim.id),
      ]);
      return [open, locked, after].every((x) => seenA.includes(x)) && seenB.includes(after) && byosA.includes(a.inboundText) && byosB.includes(b.inboundText);
    },
    20_000,
    "every message stored and attributed",
  );
  for (const t of [a, b]) {
    const rows = await ctx.sql<{ id: number }[]>`select id from messages where text in ${ctx.sql(t.privateTexts)} order by id`;
    t.messageIds = rows.map((r) => r.id);
  }
}, 60_000);

afterAll(async () => {
  for (const t of [a, b]) {
    t?.pusher.disconnect();
    t?.receiver.stop();
  }
  await second?.close();
  await stopServer(ctx);
});

describe("the world the probes run in", () => {
  test("both see the open messages; the one that arrived under A's lock is A's alone; B sees the lock but not its holder", async () => {
    const { open, locked, after } = world.texts;
    expect(await messageTexts(a, world.shared.id)).toEqual(expect.arrayContaining([open, locked, after]));
    const seenB = await messageTexts(b, world.shared.id);
    expect(seenB).toEqual(expect.arrayContaining([open, after]));
    expect(seenB).not.toContain(locked);
    const number = await request("GET", `/api/numbers/${world.shared.id}`, { token: b.users.owner.token });
    expect(number.status).toBe(200);
    expect(number.body.data).toMatchObject({ locked: true, lock: null });
    expect(number.body.data.organizations).toEqual([{ id: b.org.id, name: b.org.name, alias: `Shared ${b.tag}`, team_id: b.team.id }]);
    expect(a.messageIds.length).toBe(a.privateTexts.length);
    // B may not lock, unlock or send on it while A holds it; the 409 names no holder.
    for (const [method, path, body] of [
      ["POST", `/api/numbers/${world.shared.id}/lock`, {}],
      ["POST", `/api/numbers/${world.shared.id}/unlock`, undefined],
      ["POST", "/api/messages", { hosted_sim: world.shared.id, to: "+15550002222", text: "probe" }],
    ] as const) {
      const res = await request(method, path, { token: b.users.owner.token, body });
      expect([path, res.status, res.body.code]).toEqual([path, 409, "number_locked"]);
      expect(Object.keys(res.body).sort()).toEqual(["code", "locked_until", "message"]);
      expect(foreignFindings(res.text, res.body, others(a))).toEqual([]);
    }
    expect(ops.filter((op) => op.params.length > 0).length).toBeGreaterThan(20);
    // The scan is not blind: each organization's own answers do hold the strings it looks for.
    for (const t of [a, b]) {
      const token = t.users.owner.token;
      const own = await Promise.all(
        ["/api/teams", "/api/api-keys", `/api/numbers/${world.shared.id}`, `/api/messages?hosted_sim=${world.shared.id}`, "/api/webhook-integrations"].map(
          (p) => request("GET", p, { token }),
        ),
      );
      const seen = own.flatMap((r) => foreignFindings(r.text, r.body, others(t)));
      expect(seen).toContain(`text ${JSON.stringify(t.team.name)}`);
      // The lock holder's own view of the number names it in `lock.organization_id`.
      if (t === a) expect(seen).toContain(`organization_id ${a.org.id}`);
    }
  });
});

describe("every route with path parameters, called with the other organization's ids", () => {
  test("answers 404 (or 403 for a credential the operation refuses), never foreign data, and changes nothing", async () => {
    const failures: string[] = [];
    const probes: { caller: Probed; owner: Probed; op: Operation; credential: string; token: string; url: string }[] = [];
    for (const [caller, owner] of [
      [a, b],
      [b, a],
    ] as const) {
      for (const op of ops.filter((o) => o.params.length > 0)) {
        const paths = pathsFor(
          op,
          (p) => idsFor(owner, op.path, p),
          (p) => idsFor(caller, op.path, p),
        );
        for (const [credential, token] of Object.entries(credentialsOf(caller))) {
          for (const path of paths) probes.push({ caller, owner, op, credential, token, url: path });
        }
      }
    }
    await forEachLimit(probes, 6, async ({ caller, owner, op, credential, token, url }) => {
      const res = await request(op.method, url, { token, body: bodyFor(op, caller) });
      const where = `${caller.label} ${credential}: ${op.method} ${url} → ${res.status} ${res.text.slice(0, 160)}`;
      const denied = res.status === 404 ? res.body?.code === "not_found" : res.status === 403 && DENIED_403.has(res.body?.code);
      if (!denied) failures.push(where);
      const leaks = foreignFindings(res.text, res.body, others(owner));
      if (leaks.length) failures.push(`${where}: ${leaks.join(", ")}`);
    });
    expect(failures).toEqual([]);
    expect(probes.length).toBeGreaterThan(500);

    // Nothing of either organization was touched by the other's attempts.
    for (const t of [a, b]) {
      const token = t.users.owner.token;
      expect((await request("GET", `/api/teams/${t.team.id}`, { token })).body.data.name).toBe(`Team ${t.tag}`);
      for (const k of Object.values(t.keys)) expect((await request("GET", "/api/me", { token: k.key })).status).toBe(200);
      expect((await request("GET", `/api/byos/devices/${t.device.id}`, { token })).body.data.status).toBe("active");
      expect((await request("GET", `/api/webhook-integrations/${t.hook.id}`, { token })).body.data.name).toBe(`Hook ${t.tag}`);
      expect((await request("GET", `/api/webhook-integrations/${t.hook.id}/mappings/${t.hook.mappingId}`, { token })).status).toBe(200);
      expect((await request("GET", `/api/numbers/${t.byosSim.id}`, { token })).body.data.organizations[0].alias).toBe(`Byos ${t.tag}`);
      expect((await request("GET", `/api/numbers/${world.shared.id}`, { token })).body.data.organizations[0].alias).toBe(`Shared ${t.tag}`);
    }
  }, 60_000);
});

// Base values for body fields, by name; ids are the caller's own unless the probe swaps one for the other's.
const ID_FIELDS = ["team_id", "hosted_sim_id", "hosted_sim", "user_id"] as const;
function ownValue(t: Tenant, field: string): unknown {
  if (field === "team_id") return t.team.id;
  if (field === "hosted_sim_id" || field === "hosted_sim") return t.byosSim.id;
  if (field === "user_id") return t.users.member.id;
  return { to: "+15550002222", text: "probe", alias: "probe", forwarding_mode: "always", name: "probe" }[field];
}

describe("the other organization's ids in bodies and queries", () => {
  test("every body field or query parameter naming a team, number or user answers a foreign id exactly as an id that does not exist", async () => {
    const failures: string[] = [];
    let probes = 0;
    for (const [caller, owner] of [
      [a, b],
      [b, a],
    ] as const) {
      for (const op of ops) {
        const props = Object.keys(op.bodySchema?.properties ?? {});
        const fields = [...props, ...op.query].filter((f) => (ID_FIELDS as readonly string[]).includes(f));
        for (const field of fields) {
          const path = pathsFor(
            op,
            (p) => idsFor(caller, op.path, p).slice(0, 1),
            () => [],
          )[0]!;
          const inQuery = op.query.includes(field);
          const call = (token: string, id: unknown) => {
            const body = inQuery ? undefined : Object.fromEntries(props.filter((p) => p !== "email").map((p) => [p, p === field ? id : ownValue(caller, p)]));
            return request(op.method, inQuery ? `${path}?${field}=${id}` : path, { token, body });
          };
          for (const credential of ["owner", "keyAll"]) {
            const token = credentialsOf(caller)[credential]!;
            const res = await call(token, ownValue(owner, field));
            const missing = await call(token, 2_000_000_000);
            probes++;
            const where = `${caller.label} ${credential}: ${op.method} ${path} ${field}=${ownValue(owner, field)} → ${res.status} ${res.text.slice(0, 160)}`;
            const refused =
              res.status === 404 || (res.status === 403 && DENIED_403.has(res.body?.code)) || (res.status === 422 && res.body?.errors?.[field] !== undefined);
            // A list filtered by a foreign team may answer an empty list instead.
            const emptyList = op.method === "GET" && res.status === 200 && Array.isArray(res.body?.data) && res.body.data.length === 0;
            if (!refused && !emptyList) failures.push(where);
            // Never reveal which: the answer for the other's id is the answer for an id nobody has.
            if (
              res.status !== missing.status ||
              JSON.stringify(res.body) !== JSON.stringify(missing.body).replaceAll("2000000000", String(ownValue(owner, field)))
            )
              failures.push(`${where} differs from a missing id: ${missing.status} ${missing.text.slice(0, 160)}`);
            const leaks = foreignFindings(res.text, res.body, others(owner));
            if (leaks.length) failures.push(`${where}: ${leaks.join(", ")}`);
          }
        }
      }
    }
    expect(failures).toEqual([]);
    expect(probes).toBeGreaterThan(10);
  }, 30_000);
});

describe("reading with own ids and lists", () => {
  test("no GET answer of any credential carries anything of the other organization", async () => {
    const failures: string[] = [];
    for (const [caller, owner] of [
      [a, b],
      [b, a],
    ] as const) {
      for (const op of ops.filter((o) => o.method === "GET")) {
        const paths = pathsFor(
          op,
          (p) => idsFor(caller, op.path, p),
          () => [],
        );
        // A waiting read (messages/next) reads from the first message and answers within a second.
        const urls = op.query.includes("hosted_sim")
          ? paths.flatMap((p) => [world.shared.id, caller.byosSim.id].map((id) => `${p}?hosted_sim=${id}&per_page=100`))
          : op.query.includes("timeout")
            ? paths.map((p) => `${p}?after=0&timeout=1`)
            : paths;
        for (const [credential, token] of Object.entries(credentialsOf(caller))) {
          for (const url of urls) {
            const res = await request("GET", url, { token });
            const leaks = foreignFindings(res.text, res.body, others(owner));
            if (leaks.length) failures.push(`${caller.label} ${credential}: GET ${url} → ${res.status}: ${leaks.join(", ")}`);
            if (res.status >= 500) failures.push(`${caller.label} ${credential}: GET ${url} → ${res.status}`);
          }
        }
      }
    }
    expect(failures).toEqual([]);
  }, 30_000);
});

describe("realtime", () => {
  test("B's pusher-js is refused every private channel of A, and the auth endpoint answers 403", async () => {
    const channels = [
      `private-organization.${a.org.id}`,
      `private-team.${a.team.id}`,
      `private-device.${a.device.id}`,
      `private-device.${a.pendingDevice.id}`,
      `private-number.${a.byosSim.id}`,
    ];
    for (const channel of channels) {
      const refused = await subscribed(b.pusher, channel).then(
        () => null,
        (e: Error & { data?: { status?: number } }) => e,
      );
      expect(refused?.data?.status).toBe(403);
      b.pusher.unsubscribe(channel);
      for (const [credential, token] of Object.entries(credentialsOf(b))) {
        const res = await request("POST", "/api/broadcasting/auth", { token, body: { socket_id: "1234.5678", channel_name: channel } });
        if (res.status !== 403) throw new Error(`${credential} on ${channel}: ${res.status} ${res.text}`);
      }
    }
  });

  test("a bare Pusher protocol 7 socket of B cannot reuse its own auth, A's auth or a forged one for A's channel", async () => {
    const { key } = ctx.services.realtime.credentials;
    const raw = await openRaw(`ws://127.0.0.1:${ctx.port}/app/${key}?protocol=7&client=isolation&version=1`);
    const socketId = (await raw.event("pusher:connection_established")).data.socket_id as string;
    const authFor = async (t: Tenant, socket: string, channel: string) =>
      (await request("POST", "/api/broadcasting/auth", { token: t.users.owner.token, body: { socket_id: socket, channel_name: channel } })).body.auth as string;
    const target = `private-organization.${a.org.id}`;
    const attempts = [
      await authFor(b, socketId, `private-organization.${b.org.id}`), // B's own grant, another channel
      await authFor(a, a.pusher.connection.socket_id, target), // A's grant, A's socket
      signChannel(key, "not-the-secret", socketId, target), // forged
    ];
    for (const auth of attempts) {
      raw.send({ event: "pusher:subscribe", data: { channel: target, auth } });
      expect((await raw.event("pusher:subscription_error")).channel).toBe(target);
    }
    // The socket still works and is subscribed to nothing of A.
    raw.send({ event: "pusher:subscribe", data: { channel: `private-organization.${b.org.id}`, auth: attempts[0] } });
    expect((await raw.event("pusher_internal:subscription_succeeded")).channel).toBe(`private-organization.${b.org.id}`);
    raw.ws.close();
  });

  test("B receives the open messages but never one that arrived under A's lock, nor anything else of A", async () => {
    const { open, locked, after } = world.texts;
    const got = (t: Probed, text: string) => t.events.some((e) => e.event === "message.received" && e.data.includes(text));
    // Events of one channel arrive in order: once the later message is in, the earlier would be too.
    await eventually(() => got(b, after) && got(b, open) && got(a, locked) && got(a, after), 10_000, "message.received events");
    const leaks = b.events.flatMap((e) => foreignFindings(e.data, JSON.parse(e.data), others(a)).map((f) => `${e.channel} ${e.event}: ${f}`));
    leaks.push(...a.events.flatMap((e) => foreignFindings(e.data, JSON.parse(e.data), others(b)).map((f) => `${e.channel} ${e.event}: ${f}`)));
    expect(leaks).toEqual([]);
  });
});

describe("webhooks", () => {
  test("B's receiver never gets A's messages (nor the one under A's lock), and every delivery verifies", async () => {
    const { locked, after } = world.texts;
    const got = (t: Tenant, text: string) => t.receiver.received.some((r) => r.event?.data?.text === text);
    await eventually(() => got(b, after) && got(a, locked) && got(a, after) && got(b, b.inboundText), 20_000, "webhook deliveries");
    for (const [mine, theirs] of [
      [a, b],
      [b, a],
    ] as const) {
      for (const r of mine.receiver.received) {
        expect(r.verifiedWith).toBe(mine.hook.secret);
        expect(foreignFindings(r.body, r.event, others(theirs))).toEqual([]);
      }
    }
    // Neither a delivery row nor a log record (a first attempt that succeeded is its log record alone).
    const forB = await ctx.sql`
      select 1 from webhook_deliveries d join messages m on m.id = d.message_id where d.webhook_integration_id = ${b.hook.id} and m.text = ${locked}
      union all
      select 1 from webhook_delivery_logs l join messages m on m.id = l.message_id where l.webhook_integration_id = ${b.hook.id} and m.text = ${locked}`;
    expect(forB.length).toBe(0);
  });

  test("organization events (every type subscribed) reach only their organization's integration", async () => {
    const marker = (t: Tenant) => `device event of ${t.tag}`;
    await ctx.sql.begin((tx) =>
      appendEvents(
        tx,
        [a, b].map((t) => ({ organizationId: t.org.id, type: "device.online" as const, deviceId: t.device.id, payload: { note: marker(t) } })),
      ),
    );
    ctx.services.events.notify();
    const got = (t: Tenant, note: string) => t.receiver.received.some((r) => r.event?.data?.note === note);
    await eventually(() => got(a, marker(a)) && got(b, marker(b)), 20_000, "device event deliveries");
    expect(got(a, marker(b)) || got(b, marker(a))).toBe(false);
  });
});

describe("the event log (GET /api/events)", () => {
  type Item = { id: string; type: string; organization_id: number; data: Record<string, unknown> };
  const waiting = () => ctx.services.eventWaiters.size() + (second?.services.eventWaiters.size() ?? 0);
  /** Every event a credential reads (following next_cursor), or the refusal. */
  async function readAll(token: string, query = ""): Promise<{ status: number; items: Item[]; texts: string[] }> {
    const items: Item[] = [];
    const texts: string[] = [];
    let after = "";
    for (;;) {
      const res = await request("GET", `/api/events?per_page=500${query}${after ? `&after=${after}` : ""}`, { token });
      texts.push(res.text);
      if (res.status !== 200) return { status: res.status, items, texts };
      items.push(...res.body.data);
      if (!res.body.meta.has_more) return { status: 200, items, texts };
      after = res.body.meta.next_cursor;
    }
  }

  test("every credential reads only its own organization's events, keys only the families they hold, whatever the filter", async () => {
    // The seeded events of both are readable (each owner sees its four).
    for (const t of [a, b]) await eventually(async () => (await readAll(t.users.owner.token, "&types=webhook.test")).items.length > 0, 20_000, "seeded events");
    const failures: string[] = [];
    for (const [caller, owner] of [
      [a, b],
      [b, a],
    ] as const) {
      for (const [credential, token] of Object.entries(credentialsOf(caller))) {
        for (const query of [
          "",
          `&hosted_sim=${world.shared.id}`,
          `&device=${owner.device.id}`,
          `&hosted_sim=${owner.byosSim.id}`,
          "&types=message.received,number.locked",
        ]) {
          const { status, items, texts } = await readAll(token, query);
          const where = `${caller.label} ${credential} ${query} → ${status}`;
          const leaks = texts.flatMap((text) => foreignFindings(text, JSON.parse(text), others(owner)));
          if (leaks.length) failures.push(`${where}: ${leaks.join(", ")}`);
          if (items.some((e) => e.organization_id !== caller.org.id)) failures.push(`${where}: another organization's event`);
          if (status !== 200 && status !== 403) failures.push(where);
        }
      }
      const own = await readAll(credentialsOf(caller).owner!);
      // The scan is not blind: the organization's own events carry the strings it looks for.
      expect(own.texts.flatMap((text) => foreignFindings(text, JSON.parse(text), others(caller)))).toContain(`text ${JSON.stringify(caller.team.name)}`);
      expect(own.items.map((e) => e.type)).toEqual(expect.arrayContaining(["message.received", "number.locked", "device.online", "webhook.test"]));
      // Keys see the families they hold: messages.read sees no device event, numbers.read no message.
      expect((await readAll(caller.keys.keyMessagesRead!.key)).items.every((e) => e.type.startsWith("message."))).toBe(true);
      expect((await readAll(caller.keys.keyNumbersRead!.key)).items.some((e) => e.type.startsWith("message."))).toBe(false);
      expect((await readAll(caller.keys.keyNone!.key)).status).toBe(403);
    }
    expect(failures).toEqual([]);
  });

  test("the other organization's event ids only position a read; forged cursors are refused or position only", async () => {
    const ownOf = async (t: Probed) => (await readAll(t.users.owner.token)).items;
    const [itemsA, itemsB] = [await ownOf(a), await ownOf(b)];
    for (const [caller, mine, theirs] of [
      [a, itemsA, itemsB],
      [b, itemsB, itemsA],
    ] as const) {
      for (const foreign of theirs) {
        const { items, texts } = await readAll(caller.users.owner.token, `&after=${foreign.id}`);
        expect(items.every((e) => e.organization_id === caller.org.id)).toBe(true);
        expect(texts.flatMap((text) => foreignFindings(text, JSON.parse(text), others(caller === a ? b : a)))).toEqual([]);
        // Exactly its own events after that place in the log, as if the cursor had been its own.
        expect(mine.map((e) => e.id)).toEqual(expect.arrayContaining(items.map((e) => e.id)));
      }
      const forged = [
        `${theirs[0]!.id}!`,
        theirs[0]!.id.replace("evt_", "evt-"),
        "evt_" + Buffer.from(`${caller.org.id}`).toString("base64url"),
        String(theirs[0]!.id.length),
      ];
      for (const cursor of forged) {
        const res = await request("GET", `/api/events?after=${encodeURIComponent(cursor)}`, { token: caller.users.owner.token });
        expect([cursor, res.status, Object.keys(res.body.errors ?? {})]).toEqual([cursor, 422, ["after"]]);
      }
      const made = "evt_" + Buffer.from("1.1").toString("base64url");
      const res = await readAll(caller.users.owner.token, `&after=${made}`);
      expect(res.items.every((e) => e.organization_id === caller.org.id)).toBe(true);
    }
  });

  test("a wait positioned at the other organization's newest event is answered only by its own, on whichever instance it waits", async () => {
    const append = async (t: Probed, n: number) => {
      await ctx.sql.begin((tx) => appendEvents(tx, tenantEvents(t, world, n)));
      ctx.services.events.notify();
    };
    let n = 1;
    for (const [caller, owner] of [
      [a, b],
      [b, a],
    ] as const) {
      for (const [credential, token] of Object.entries({ owner: caller.users.owner.token, oauthMember: caller.oauthMember, keyAll: caller.keys.keyAll!.key })) {
        // The other organization's event is now the newest of the log: the wait starts after it.
        await append(owner, n++);
        const theirs = await eventually(async () => (await readAll(owner.users.owner.token)).items.find((e) => e.data.n === n - 1)?.id, 20_000, "their event");
        const before = waiting();
        const answer = request("GET", `/api/events?after=${theirs}&wait=10&types=webhook.test`, { token });
        await eventually(() => waiting() > before, 5000, "the wait to register");
        await append(owner, n++);
        await append(caller, n);
        const res = await answer;
        expect([credential, res.status]).toEqual([credential, 200]);
        expect(res.body.data.map((e: Item) => [e.organization_id, e.type, e.data.n])).toEqual([[caller.org.id, "webhook.test", n++]]);
        expect(foreignFindings(res.text, res.body, others(owner))).toEqual([]);
      }
    }
  }, 60_000);
});

describe("a user in two organizations (A and D) reads both and never the third (B)", () => {
  let bridge: Awaited<ReturnType<typeof buildBridge>>;
  beforeAll(async () => {
    bridge = await buildBridge(ctx, world);
  }, 30_000);
  const as = (path: string, headers: Record<string, string> = {}) => request("GET", path, { token: bridge.token, headers });
  const ids = (body: { data: { id: number }[] }) => body.data.map((x) => x.id).sort((x, y) => x - y);
  const sorted = (xs: number[]) => [...xs].sort((x, y) => x - y);

  test("numbers: A's and D's, each once; the number of both lists both attachments and none of B's", async () => {
    const list = await as("/api/numbers");
    expect(list.status).toBe(200);
    expect(ids(list.body)).toEqual(sorted([a.byosSim.id, world.shared.id, bridge.number.id]));
    const shared = list.body.data.find((n: { id: number }) => n.id === world.shared.id);
    expect(shared.organizations).toEqual([
      { id: a.org.id, name: a.org.name, alias: `Shared ${a.tag}`, team_id: a.team.id },
      { id: bridge.org.id, name: bridge.org.name, alias: `Shared ${bridge.tag}`, team_id: null },
    ]);
    expect(shared.teams).toEqual([{ id: a.team.id, name: a.team.name }]);
    // A holds the lock: one of the reader's organizations, so the reader sees who.
    expect(shared.lock?.organization_id).toBe(a.org.id);
    // D joined after the messages: the reader sees what A sees (numbers.test.ts counts a message of both once).
    const seenByA = (await request("GET", `/api/numbers/${world.shared.id}`, { token: a.users.owner.token })).body.data.messages_received_count;
    expect(shared.messages_received_count).toBe(seenByA);
    const one = await as(`/api/numbers/${bridge.number.id}`);
    expect(one.body.data.organizations).toEqual([{ id: bridge.org.id, name: bridge.org.name, alias: `Own ${bridge.tag}`, team_id: null }]);
    expect((await as(`/api/numbers/${a.byosSim.id}`)).status).toBe(200);
    expect(foreignFindings(list.text, list.body, others(b))).toEqual([]);
  });

  test("devices: A's and D's, each naming its organization; shows across both", async () => {
    const list = await as("/api/byos/devices?per_page=100");
    expect(list.status).toBe(200);
    expect(ids(list.body)).toEqual(sorted([a.device.id, a.pendingDevice.id, bridge.device.id]));
    const orgOf = Object.fromEntries(list.body.data.map((d: { id: number; organization: { id: number } }) => [d.id, d.organization.id]));
    expect(orgOf).toEqual({ [a.device.id]: a.org.id, [a.pendingDevice.id]: a.org.id, [bridge.device.id]: bridge.org.id });
    for (const id of [a.device.id, bridge.device.id]) expect((await as(`/api/byos/devices/${id}`)).status).toBe(200);
    expect(foreignFindings(list.text, list.body, others(b))).toEqual([]);
  });

  test("X-Organization-Id narrows reads to one; an organization the user is not in answers 404", async () => {
    const inD = { "x-organization-id": String(bridge.org.id) };
    expect(ids((await as("/api/numbers", inD)).body)).toEqual(sorted([world.shared.id, bridge.number.id]));
    expect(ids((await as("/api/byos/devices", inD)).body)).toEqual([bridge.device.id]);
    expect((await as(`/api/byos/devices/${a.device.id}`, inD)).status).toBe(404);
    expect((await as(`/api/numbers/${a.byosSim.id}`, inD)).status).toBe(404);
    const narrowedShared = (await as(`/api/numbers/${world.shared.id}`, inD)).body.data;
    expect(narrowedShared.organizations.map((o: { id: number }) => o.id)).toEqual([bridge.org.id]);
    expect(narrowedShared.lock).toBeNull();
    for (const path of ["/api/numbers", "/api/byos/devices", `/api/numbers/${world.shared.id}`, "/api/me"]) {
      const res = await as(path, { "x-organization-id": String(b.org.id) });
      expect([path, res.status, res.body.code]).toEqual([path, 404, "not_found"]);
    }
  });

  test("B's ids answer 404 and no GET of any route carries anything of B, with or without X-Organization-Id", async () => {
    for (const path of [`/api/numbers/${b.byosSim.id}`, `/api/byos/devices/${b.device.id}`, `/api/byos/devices/${b.pendingDevice.id}`]) {
      expect([path, (await as(path)).status]).toEqual([path, 404]);
    }
    const failures: string[] = [];
    for (const op of ops.filter((o) => o.method === "GET" && o.params.length === 0)) {
      const url = op.query.includes("hosted_sim") ? `${op.path}?hosted_sim=${world.shared.id}&per_page=100` : op.path;
      const variants: Record<string, string>[] = [{}, { "x-organization-id": String(a.org.id) }, { "x-organization-id": String(bridge.org.id) }];
      for (const headers of variants) {
        const res = await as(url, headers);
        const leaks = foreignFindings(res.text, res.body, others(b));
        if (leaks.length || res.status >= 500) failures.push(`GET ${url} ${JSON.stringify(headers)} → ${res.status}: ${leaks.join(", ")}`);
      }
    }
    expect(failures).toEqual([]);
  });

  test("writes act in one organization: without the header, the first membership (A)", async () => {
    const me = await as("/api/me");
    expect(me.body.organization.id).toBe(a.org.id);
    // Renaming D's number's alias needs D: in A it is not found.
    const inA = await request("PATCH", `/api/numbers/${bridge.number.id}/alias`, { token: bridge.token, body: { alias: "x" } });
    expect(inA.status).toBe(404);
  });

  test("leaving D: the next read no longer spans it (membership removal revokes cached callers)", async () => {
    expect(ids((await as("/api/byos/devices")).body)).toContain(bridge.device.id);
    await createAdmin({ sql: ctx.services.sql, change: ctx.services.auth.change }).removeUser(bridge.org.id, bridge.user.email);
    const after = await as("/api/byos/devices");
    expect(ids(after.body)).toEqual(sorted([a.device.id, a.pendingDevice.id]));
    expect(ids((await as("/api/numbers")).body)).toEqual(sorted([a.byosSim.id, world.shared.id]));
    expect((await as(`/api/byos/devices/${bridge.device.id}`)).status).toBe(404);
  });
});

describe.skipIf(!process.env.DATABASE_URL || !process.env.REDIS_URL)("two instances (PostgreSQL and Redis)", () => {
  test("the probes above alternated between the two instances", () => {
    expect(second).toBeDefined();
    expect(turn).toBeGreaterThan(500);
  });
});
