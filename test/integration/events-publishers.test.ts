import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type { Job } from "../../server/jobs/queue";
import { inboundFanoutHandler } from "../../server/messages/fanout";
import { createTenant } from "../fixtures";
import { activeDevice } from "../fixtures-devices";
import { logRows, watchRealtime } from "../fixtures-events";
import { attachNumber, createPoolNumber, createTeam, eventually, receiveSms } from "../fixtures-numbers";
import { createTestContext, type TestContext } from "../helpers";

/**
 * Every publisher appends its events to the log in the transaction of its change: one row per
 * organization that may see the event, with that organization's view, and realtime delivers each
 * row with its cursor as `event_id`. A change that does not happen appends nothing.
 */
let ctx: TestContext;
beforeAll(async () => {
  ctx = await createTestContext();
  ctx.services.start();
}, 60_000);
afterAll(() => ctx.close());

const types = async (org: number, filter: (r: Awaited<ReturnType<typeof logRows>>[number]) => boolean = () => true, min = 0) =>
  (await logRows(ctx.services, [org], undefined, min)).filter(filter).map((r) => r.type);

describe("number locks", () => {
  test("number.locked: the full lock for the holder's row, lock: null for the other's; a refused lock appends nothing; unlock once per organization", async () => {
    const a = await createTenant(ctx.sql);
    const b = await createTenant(ctx.sql);
    const sim = await createPoolNumber(ctx.sql, { maxOrgs: 5 });
    await attachNumber(ctx.sql, sim.id, a.org.id);
    await attachNumber(ctx.sql, sim.id, b.org.id);
    const deliveries = watchRealtime(ctx.services);
    expect((await ctx.request("POST", `/api/numbers/${sim.id}/lock`, { token: a.token, body: {} })).status).toBe(200);
    const [forA] = await logRows(ctx.services, [a.org.id], "number.locked", 1);
    const [forB] = await logRows(ctx.services, [b.org.id], "number.locked", 1);
    expect(forA!.payload).toMatchObject({ hosted_sim_id: sim.id, locked: true, lock: { organization_id: a.org.id } });
    expect(forB!.payload).toEqual({ hosted_sim_id: sim.id, number: sim.number, locked: true, lock: null });

    // B's lock is refused (409): its transaction rolled back, nothing was appended for anyone
    // (read after the unlock that committed later: everything before it is readable by then).
    expect((await ctx.request("POST", `/api/numbers/${sim.id}/lock`, { token: b.token, body: {} })).status).toBe(409);
    expect((await ctx.request("POST", `/api/numbers/${sim.id}/unlock`, { token: a.token })).status).toBe(200);
    for (const org of [a.org.id, b.org.id]) {
      expect(await types(org, () => true, 2)).toEqual(["number.locked", "number.unlocked"]);
      const rows = await logRows(ctx.services, [org], "number.unlocked", 1);
      expect(rows.map((r) => r.payload.reason)).toEqual(["unlock"]);
    }
    // Realtime: each row on its channels, limited to its organization, carrying its cursor.
    const locked = await eventually(() => {
      const found = deliveries.filter((d) => d.event === "number.locked" && d.data.hosted_sim_id === sim.id);
      return found.length >= 4 && found;
    });
    expect(locked.filter((d) => d.organizations[0] === a.org.id).map((d) => d.data.event_id)).toEqual([forA!.cursor, forA!.cursor]);
    expect(
      locked
        .filter((d) => d.organizations[0] === b.org.id)
        .map((d) => d.channel)
        .sort(),
    ).toEqual([`private-number.${sim.id}`, `private-organization.${b.org.id}`].sort());
  });
});

describe("inbound fan-out", () => {
  test("message.received: one row per organization that may see the message, with its team and alias; a repeated fan-out appends nothing", async () => {
    const a = await createTenant(ctx.sql);
    const b = await createTenant(ctx.sql);
    const team = await createTeam(ctx.sql, a.org.id, "support");
    const sim = await createPoolNumber(ctx.sql, { maxOrgs: 5 });
    await attachNumber(ctx.sql, sim.id, a.org.id, { alias: "A's line", teamId: team.id });
    await attachNumber(ctx.sql, sim.id, b.org.id);
    const deliveries = watchRealtime(ctx.services);
    const stored = await receiveSms(ctx.sql, sim.id, { text: "your code is 482913" });
    const [forA] = await eventually(() => logRows(ctx.services, [a.org.id], "message.received").then((r) => r.length > 0 && r));
    const [forB] = await eventually(() => logRows(ctx.services, [b.org.id], "message.received").then((r) => r.length > 0 && r));
    expect(forA!.payload).toMatchObject({
      message: { id: stored.messageId, team_id: team.id, code: "482913" },
      hosted_sim: { id: sim.id, number: sim.number, alias: "A's line" },
      team: { id: team.id, name: "support" },
    });
    expect(forB!.payload).toMatchObject({ message: { id: stored.messageId, team_id: null }, hosted_sim: { id: sim.id, alias: null }, team: null });
    expect(forA!.teamId).toBe(team.id);

    // Appended by the transaction that stored the message: no job stands between them.
    expect((await ctx.sql`select 1 from jobs where queue = 'message.inbound'`).length).toBe(0);
    expect(await types(a.org.id, () => true, 1)).toEqual(["message.received"]);
    expect(await types(b.org.id, () => true, 1)).toEqual(["message.received"]);

    const onTeam = await eventually(() => deliveries.find((d) => d.channel === `private-team.${team.id}`));
    expect(onTeam.data.event_id).toBe(forA!.cursor);

    // A job an earlier version left for a message it stored (no events yet) announces it once, however often it runs.
    await ctx.sql`delete from events where type = 'message.received' and hosted_sim_id = ${sim.id}`;
    const legacy = inboundFanoutHandler({ sql: ctx.sql, events: ctx.services.events });
    const job: Job<{ message_ids: number[] }> = {
      id: 1,
      queue: "message.inbound",
      payload: { message_ids: [stored.messageId] },
      attempts: 1,
      max_attempts: 10,
    };
    await legacy([job]);
    await legacy([{ ...job, attempts: 2 }]);
    expect(await types(a.org.id, () => true, 1)).toEqual(["message.received"]);
    expect(await types(b.org.id, () => true, 1)).toEqual(["message.received"]);
  });
});

describe("devices", () => {
  test("verification, disable, enable, revoke: one row each for the device's organization, config.changed with config_version", async () => {
    const t = await createTenant(ctx.sql);
    const { device } = await activeDevice(ctx, t.token);
    const ofDevice = (r: { deviceId: number | null }) => r.deviceId === device.id;
    expect(await types(t.org.id, ofDevice, 2)).toEqual(["sim.verified", "config.changed"]);
    const path = `/api/byos/devices/${device.id}`;
    expect((await ctx.request("POST", `${path}/disable`, { token: t.token })).status).toBe(200);
    expect((await ctx.request("POST", `${path}/enable`, { token: t.token })).status).toBe(200);
    expect((await ctx.request("DELETE", path, { token: t.token })).status).toBe(204);
    expect(await types(t.org.id, ofDevice, 8)).toEqual([
      "sim.verified",
      "config.changed",
      "device.disabled",
      "config.changed",
      "device.enabled",
      "config.changed",
      "device.revoked",
      "config.changed",
    ]);
    const rows = (await logRows(ctx.services, [t.org.id], undefined, 8)).filter(ofDevice);
    expect(rows[2]!.payload).toMatchObject({ device_id: device.id, organization_id: t.org.id, status: "disabled", config_version: expect.any(Number) });
    expect(rows[6]!.payload).toMatchObject({ status: "revoked", is_online: false });
    for (const r of rows.filter((r) => r.type === "config.changed")) expect(r.payload.config_version).toEqual(expect.any(Number));
    // A refused move (revoked is final) appends nothing: a lock taken afterwards is the next row.
    expect((await ctx.request("POST", `${path}/enable`, { token: t.token })).status).toBe(409);
    const sim = await createPoolNumber(ctx.sql, { maxOrgs: 5 });
    await attachNumber(ctx.sql, sim.id, t.org.id);
    expect((await ctx.request("POST", `/api/numbers/${sim.id}/lock`, { token: t.token, body: {} })).status).toBe(200);
    expect((await types(t.org.id, () => true, 9)).slice(-2)).toEqual(["config.changed", "number.locked"]);
  });
});
