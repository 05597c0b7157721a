import { beforeAll, describe, expect, test } from "bun:test";
import type { Sql } from "../../server/db/client";
import { createSmsIngest } from "../../server/devices/sms-ingest";
import { PROCESS_CHUNK, processDeviceSms } from "../../server/devices/sms-process";
import { insertSmsBatch } from "../../server/devices/sms-store";
import { createTenant } from "../fixtures";
import { activeDevice, smsBody } from "../fixtures-devices";
import { eventually } from "../fixtures-numbers";
import { expectErrorShape, sharedTestContext, type TestContext } from "../helpers";

let ctx: TestContext;
beforeAll(async () => {
  ctx = await sharedTestContext();
});

async function messagesOf(deviceId: number) {
  await ctx.services.devices.settle();
  await processDeviceSms(ctx.sql, [{ device_id: deviceId }]);
  return ctx.sql<{ text: string; external_id: string }[]>`select text, external_id from messages where device_id = ${deviceId} order by id`;
}

describe("SMS submission idempotency", () => {
  test("the same message_id twice, in turn and concurrently, gives one message and the same answer", async () => {
    const { token } = await createTenant(ctx.sql);
    const { device } = await activeDevice(ctx, token);
    const sms = smsBody();
    const post = () => ctx.request("POST", `/api/byos/devices/${device.id}/sms`, { token, body: sms });
    const first = await post();
    const again = await post();
    const burst = await Promise.all(Array.from({ length: 20 }, post));
    for (const r of [first, again, ...burst]) {
      expect(r.status).toBe(202);
      expect(r.body.message_id).toBe(sms.message_id);
    }
    const rows = await messagesOf(device.id);
    expect([...rows]).toEqual([{ text: sms.body, external_id: sms.message_id }]);
  });

  test("a message_id in any spelling the uuid format takes (upper case, the urn:uuid: prefix) is the same id, never a 500", async () => {
    const { token } = await createTenant(ctx.sql);
    const { device } = await activeDevice(ctx, token);
    const sms = smsBody();
    for (const id of [`urn:uuid:${sms.message_id}`, sms.message_id.toUpperCase(), `URN:UUID:${sms.message_id}`, sms.message_id]) {
      const res = await ctx.request("POST", `/api/byos/devices/${device.id}/sms`, { token, body: { ...sms, message_id: id } });
      expect([id, res.status, res.body.message_id]).toEqual([id, 202, id]);
    }
    expect([...(await messagesOf(device.id))]).toEqual([{ text: sms.body, external_id: sms.message_id }]);
  });

  test("the same SMS under another message_id (same slot, sender, body, received_at to the second) is stored once", async () => {
    const { token } = await createTenant(ctx.sql);
    const { device } = await activeDevice(ctx, token);
    const sms = smsBody({ received_at: "2026-11-21T10:00:00.120Z" });
    const twin = { ...sms, message_id: crypto.randomUUID(), received_at: "2026-11-21T10:00:00.980Z" };
    const other = { ...sms, message_id: crypto.randomUUID(), received_at: "2026-11-21T10:00:01.000Z" };
    const answers = await Promise.all([sms, twin, other].map((body) => ctx.request("POST", `/api/byos/devices/${device.id}/sms`, { token, body })));
    expect(answers.map((a) => a.status)).toEqual([202, 202, 202]);
    expect(answers.map((a) => a.body.message_id)).toEqual([sms.message_id, twin.message_id, other.message_id]);
    expect((await messagesOf(device.id)).length).toBe(2);
  });

  test("the same-SMS key holds slot (none = slot 0), sender, body and the UTC second, and nothing else", async () => {
    const { token } = await createTenant(ctx.sql);
    const [{ device }, { device: other }] = await Promise.all([activeDevice(ctx, token), activeDevice(ctx, token)]);
    const base = {
      device_id: device.id,
      sim_slot: 1 as number | null,
      from_number: "+15550001111",
      body: "Your code is 123456",
      received_at: "2026-11-21T10:00:00.100Z",
    };
    // Each row inserted alone, skipping duplicates: true when it was stored, false when the rule took it for a stored SMS.
    const stores = async (row: Partial<typeof base>, sql: Sql = ctx.sql) => {
      const r = { ...base, ...row };
      const inserted = await sql`insert into device_sms (device_id, message_id, sim_slot, from_number, body, received_at)
        values (${r.device_id}, ${crypto.randomUUID()}, ${r.sim_slot}, ${r.from_number}, ${r.body}, ${r.received_at}) on conflict do nothing returning id`;
      return inserted.length === 1;
    };
    expect(await stores({})).toBe(true);
    // The same SMS: later in the same UTC second, or written in another offset.
    expect(await stores({ received_at: "2026-11-21T10:00:00.999Z" })).toBe(false);
    expect(await stores({ received_at: "2026-11-21T15:30:00.500+05:30" })).toBe(false);
    await ctx.sql.begin(async (tx) => {
      await tx`set local timezone = 'Pacific/Chatham'`;
      expect(await stores({}, tx)).toBe(false);
    });
    // Another SMS: the next second, another slot, sender, body or device; the sender/body split of the same text.
    expect(await stores({ received_at: "2026-11-21T10:00:01.000Z" })).toBe(true);
    expect(await stores({ sim_slot: 2 })).toBe(true);
    expect(await stores({ from_number: "+15550001112" })).toBe(true);
    expect(await stores({ body: "Your code is 123457" })).toBe(true);
    expect(await stores({ device_id: other.id })).toBe(true);
    expect(await stores({ from_number: "+15550001111 Your", body: "code is 123456" })).toBe(true);
    // No slot is slot 0: the same as an SMS of slot 0, another than slot 1's.
    expect(await stores({ sim_slot: null })).toBe(true);
    expect(await stores({ sim_slot: 0 })).toBe(false);
  });

  test("many concurrent submissions of many devices are all stored (group commit), each once", async () => {
    const { token } = await createTenant(ctx.sql, { plan: "pro" });
    const devices = await Promise.all([1, 2, 3].map(() => activeDevice(ctx, token)));
    const all = devices.flatMap(({ device }) => Array.from({ length: 50 }, () => ({ id: device.id, body: smsBody() })));
    const answers = await Promise.all(all.map((s) => ctx.request("POST", `/api/byos/devices/${s.id}/sms`, { token, body: s.body })));
    expect(answers.every((a) => a.status === 202)).toBe(true);
    for (const { device } of devices) expect((await messagesOf(device.id)).length).toBe(50);
  });

  test("one batch holding new SMS and duplicates of either rule (of stored SMS and of each other) stores each new SMS once and acknowledges all", async () => {
    const { token } = await createTenant(ctx.sql);
    const { device } = await activeDevice(ctx, token);
    // A new intake: batches are inserted plainly until a duplicate fails one, which is then written again skipping duplicates.
    const ingest = createSmsIngest({ sql: ctx.sql, wake: () => {} });
    const sms = (text: string, at = "2026-11-27T10:00:00.000Z") => ({
      deviceId: device.id,
      messageId: crypto.randomUUID(),
      simSlot: 1,
      from: "+15550001111",
      body: text,
      receivedAt: at,
    });
    const stored = [sms("first"), sms("second")];
    await Promise.all(stored.map((s) => ingest.submit(s)));
    const fresh = [sms("third"), sms("fourth")];
    const batch = [
      fresh[0]!,
      { ...stored[0]! }, // the same message_id again
      { ...stored[1]!, messageId: crypto.randomUUID() }, // the same SMS under another id
      fresh[1]!,
      { ...fresh[0]! }, // a duplicate within the batch itself
    ];
    // Submitted in one tick: one batch.
    await Promise.all(batch.map((s) => ingest.submit(s)));
    // Duplicates seen: the next batch skips them from the start, and stores what is new.
    const last = sms("fifth");
    await Promise.all([last, { ...fresh[1]! }].map((s) => ingest.submit(s)));
    const rows = await ctx.sql<{ body: string }[]>`select body from device_sms where device_id = ${device.id} order by id`;
    expect(rows.map((r) => r.body)).toEqual(["first", "second", "third", "fourth", "fifth"]);
  });

  test("one batch for an active, a disabled and a missing device: the first stored, the others refused with 409 and 404", async () => {
    const { token } = await createTenant(ctx.sql);
    const [active, disabled] = await Promise.all([activeDevice(ctx, token), activeDevice(ctx, token)]);
    await ctx.sql`update devices set status = 'disabled' where id = ${disabled.device.id}`;
    const ingest = createSmsIngest({ sql: ctx.sql, wake: () => {} });
    const sms = (deviceId: number) => ({
      deviceId,
      messageId: crypto.randomUUID(),
      simSlot: 1,
      from: "+15550001111",
      body: `to ${deviceId}`,
      receivedAt: new Date().toISOString(),
    });
    const [missing] = await ctx.sql<{ id: number }[]>`select coalesce(max(id), 0) + 1000 as id from devices`;
    // Submitted in one tick: one batch.
    const outcomes = await Promise.allSettled([active.device.id, disabled.device.id, Number(missing!.id)].map((id) => ingest.submit(sms(id))));
    expect(outcomes.map((o) => (o.status === "fulfilled" ? "stored" : (o.reason as { status: number }).status))).toEqual(["stored", 409, 404]);
    const stored = await ctx.sql<{ device_id: number }[]>`select device_id from device_sms where device_id in (${active.device.id}, ${disabled.device.id})`;
    expect(stored.map((r) => Number(r.device_id))).toEqual([active.device.id]);
  });

  test("one row the database refuses fails only its own submission: the others of its batch are stored and acknowledged", async () => {
    const a = await createTenant(ctx.sql);
    const b = await createTenant(ctx.sql);
    const [mine, theirs] = await Promise.all([activeDevice(ctx, a.token), activeDevice(ctx, b.token)]);
    const ingest = createSmsIngest({ sql: ctx.sql, wake: () => {} });
    const sms = (deviceId: number, receivedAt: string) => ({
      deviceId,
      messageId: crypto.randomUUID(),
      simSlot: 1,
      from: "+15550001111",
      body: crypto.randomUUID(),
      receivedAt,
    });
    // An offset PostgreSQL cannot hold (the route refuses it; the intake must still not let it fail others).
    const bad = sms(mine.device.id, "2026-11-21T10:00:00+16:00");
    const good = Array.from({ length: 5 }, () => sms(theirs.device.id, new Date().toISOString()));
    // Submitted in one tick: one batch.
    const outcomes = await Promise.allSettled([bad, ...good].map((item) => ingest.submit(item)));
    expect(outcomes.map((o) => o.status)).toEqual(["rejected", "fulfilled", "fulfilled", "fulfilled", "fulfilled", "fulfilled"]);
    const [stored] = await ctx.sql<{ n: number }[]>`select count(*)::int as n from device_sms where device_id = ${theirs.device.id}`;
    expect(stored!.n).toBe(5);
  });

  test("processing takes more SMS than one transaction holds, by id and by device, past a full page of SMS still waiting for their SIM", async () => {
    const { token } = await createTenant(ctx.sql, { plan: "enterprise" });
    const { device } = await activeDevice(ctx, token);
    await ctx.services.devices.settle();
    // Stored as the intake stores them; slot 2 has no verified card, so those SMS wait.
    const store = (n: number, slot: number) => ctx.sql<{ id: number }[]>`
      insert into device_sms (device_id, message_id, sim_slot, from_number, body, received_at)
      select ${device.id}, gen_random_uuid(), ${slot}, '+15550001111', 'chunked ' || ${slot} || ' ' || g || ' ' || gen_random_uuid(), now() from generate_series(1, ${n}) g
      returning id`;
    const byId = await store(PROCESS_CHUNK + 7, 1);
    expect(await processDeviceSms(ctx.sql, [{ ids: byId.slice(0, 10).map((r) => Number(r.id)) }, { ids: byId.slice(10).map((r) => Number(r.id)) }])).toBe(
      PROCESS_CHUNK + 7,
    );
    await store(PROCESS_CHUNK + 3, 2);
    await store(5, 1);
    expect(await processDeviceSms(ctx.sql, [{ device_id: device.id }])).toBe(5);
    const [left] = await ctx.sql<{ waiting: number; linked: number }[]>`
      select count(*) filter (where message_row_id is null)::int as waiting, count(distinct message_row_id)::int as linked from device_sms where device_id = ${device.id}`;
    expect(left).toEqual({ waiting: PROCESS_CHUNK + 3, linked: PROCESS_CHUNK + 12 });
  });

  test("SMS acknowledged before the device is revoked become messages, a backlog past one transaction's worth included; one after is refused", async () => {
    const { token } = await createTenant(ctx.sql, { plan: "enterprise" });
    const { device, numbers } = await activeDevice(ctx, token);
    const sms = smsBody({ body: "acknowledged, not yet processed" });
    expect((await ctx.request("POST", `/api/byos/devices/${device.id}/sms`, { token, body: sms })).status).toBe(202);
    await ctx.services.devices.settle();
    // A backlog the processing jobs have not reached yet, stored as the intake stores it.
    await ctx.sql`
      insert into device_sms (device_id, message_id, sim_slot, from_number, body, received_at)
      select ${device.id}, gen_random_uuid(), 1, '+15550001111', 'backlog ' || g, now() from generate_series(1, ${PROCESS_CHUNK + 2}) g`;
    expect((await ctx.request("DELETE", `/api/byos/devices/${device.id}`, { token })).status).toBe(204);
    const [left] = await ctx.sql<{ waiting: number; messages: number }[]>`
      select count(*) filter (where message_row_id is null)::int as waiting, count(message_row_id)::int as messages from device_sms where device_id = ${device.id}`;
    expect(left).toEqual({ waiting: 0, messages: PROCESS_CHUNK + 3 });
    const [linked] = await ctx.sql<
      { id: number }[]
    >`select message_row_id as id from device_sms where device_id = ${device.id} and message_id = ${sms.message_id}`;
    const shown = await ctx.request("GET", `/api/messages/${linked!.id}`, { token });
    expect(shown.body.data).toMatchObject({ text: "acknowledged, not yet processed", number: numbers[0], direction: "inbound" });
    const after = await ctx.request("POST", `/api/byos/devices/${device.id}/sms`, { token, body: smsBody() });
    expect(after.status).toBe(409);
    expectErrorShape(after.body, "invalid_state");
  });

  // The embedded database runs one transaction at a time, so the race exists on PostgreSQL only.
  test.skipIf(!process.env.DATABASE_URL)(
    "an intake that read the device before its revocation and commits after it: the revocation waits for it and turns its SMS into messages",
    async () => {
      const { token } = await createTenant(ctx.sql, { plan: "enterprise" });
      const { device } = await activeDevice(ctx, token);
      const sms = smsBody({ body: "stored while the revocation ran" });
      let release!: () => void;
      const released = new Promise<void>((resolve) => (release = resolve));
      let stored!: () => void;
      const inTransaction = new Promise<void>((resolve) => (stored = resolve));
      const intake = ctx.sql.begin(async (tx) => {
        const refused = await insertSmsBatch(
          tx,
          [{ deviceId: device.id, messageId: sms.message_id, simSlot: sms.sim_slot, from: sms.from, body: sms.body, receivedAt: sms.received_at }],
          { skipDuplicates: true },
        );
        expect([...refused]).toEqual([]);
        stored();
        await released;
      });
      await inTransaction;
      let revoked = false;
      const revocation = ctx.request("DELETE", `/api/byos/devices/${device.id}`, { token }).finally(() => (revoked = true));
      // Until the revocation waits on the intake's lock (or, without it, has finished).
      const waiting = async () =>
        (await ctx.sql<{ n: number }[]>`select count(*)::int as n from pg_stat_activity where datname = current_database() and wait_event_type = 'Lock'`)[0]!
          .n > 0;
      await eventually(async () => revoked || (await waiting()), 10_000, "the revocation to wait on the intake");
      release();
      await intake;
      expect((await revocation).status).toBe(204);
      const rows = await ctx.sql<{ processed: boolean }[]>`
        select message_row_id is not null as processed from device_sms where device_id = ${device.id} and message_id = ${sms.message_id}`;
      expect([...rows]).toEqual([{ processed: true }]);
    },
    30_000,
  );

  test("deleting a device (by hand: the application only revokes them) deletes its stored SMS, as the foreign key's cascade did", async () => {
    const { token } = await createTenant(ctx.sql);
    const { device } = await activeDevice(ctx, token);
    const kept = await activeDevice(ctx, token);
    for (const id of [device.id, kept.device.id])
      expect((await ctx.request("POST", `/api/byos/devices/${id}/sms`, { token, body: smsBody() })).status).toBe(202);
    const stored = async (id: number) => (await ctx.sql<{ n: number }[]>`select count(*)::int as n from device_sms where device_id = ${id}`)[0]!.n;
    expect([await stored(device.id), await stored(kept.device.id)]).toEqual([1, 1]);
    await ctx.sql`delete from devices where id = ${device.id}`;
    expect([await stored(device.id), await stored(kept.device.id)]).toEqual([0, 1]);
  });

  test("deleting a device by hand keeps its messages, no longer linked to it, as the foreign key's set null did (migration 0260)", async () => {
    const { token } = await createTenant(ctx.sql);
    const { device } = await activeDevice(ctx, token);
    const kept = await activeDevice(ctx, token);
    const sms = smsBody();
    for (const [id, body] of [
      [device.id, sms],
      [kept.device.id, smsBody()],
    ] as const)
      expect((await ctx.request("POST", `/api/byos/devices/${id}/sms`, { token, body })).status).toBe(202);
    expect((await messagesOf(device.id)).length).toBe(1);
    expect((await messagesOf(kept.device.id)).length).toBe(1);
    await ctx.sql`delete from devices where id = ${device.id}`;
    const [message] = await ctx.sql<{ device_id: number | null }[]>`select device_id from messages where external_id = ${sms.message_id}`;
    expect(message).toEqual({ device_id: null });
    expect((await messagesOf(kept.device.id)).length).toBe(1);
  });

  test("validation: sim_slot 1..2, body up to 1600, from up to 20, message_id a UUID", async () => {
    const { token } = await createTenant(ctx.sql);
    const { device } = await activeDevice(ctx, token);
    const res = await ctx.request("POST", `/api/byos/devices/${device.id}/sms`, {
      token,
      body: { from: "x".repeat(21), body: "b".repeat(1601), message_id: "nope", sim_slot: 3, received_at: "yesterday" },
    });
    expect(res.status).toBe(422);
    expectErrorShape(res.body, "validation_failed");
    expect(Object.keys(res.body.errors).sort()).toEqual(["body", "from", "message_id", "received_at", "sim_slot"]);
  });
});

describe("SMS attribution and empty bodies (issue 15 item 13)", () => {
  const stored = (deviceId: number) =>
    ctx.sql<{ text: string; sim_slot: number | null; hosted_sim_id: number }[]>`
      select text, sim_slot, hosted_sim_id from messages where device_id = ${deviceId} order by id`;

  test("an SMS without sim_slot is stored with the slot of the card it was attributed to", async () => {
    const { token } = await createTenant(ctx.sql);
    const { device } = await activeDevice(ctx, token, [1, 2]);
    const res = await ctx.request("POST", `/api/byos/devices/${device.id}/sms`, { token, body: smsBody({ sim_slot: undefined }) });
    expect(res.status).toBe(202);
    await messagesOf(device.id);
    const [card] = await ctx.sql<{ hosted_sim_id: number }[]>`select hosted_sim_id from sim_cards where device_id = ${device.id} and sim_slot = 1`;
    const rows = await stored(device.id);
    expect(rows.map((r) => ({ sim_slot: r.sim_slot, hosted_sim_id: r.hosted_sim_id }))).toEqual([{ sim_slot: 1, hosted_sim_id: card!.hosted_sim_id }]);
  });

  test("an empty body is accepted and stored as an empty message; an empty from is refused", async () => {
    const { token } = await createTenant(ctx.sql);
    const { device } = await activeDevice(ctx, token);
    const empty = await ctx.request("POST", `/api/byos/devices/${device.id}/sms`, { token, body: smsBody({ body: "" }) });
    expect(empty.status).toBe(202);
    expect((await messagesOf(device.id)).map((r) => r.text)).toEqual([""]);
    const noSender = await ctx.request("POST", `/api/byos/devices/${device.id}/sms`, { token, body: smsBody({ from: "" }) });
    expect(noSender.status).toBe(422);
    expect(Object.keys(noSender.body.errors)).toEqual(["from"]);
  });
});
