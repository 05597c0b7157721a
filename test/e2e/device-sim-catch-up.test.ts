import { afterAll, beforeAll, expect, test } from "bun:test";
import { createApi } from "../../device-sim/api";
import { listenDeviceChannel, type SendEvent } from "../../device-sim/pusher";
import { createTenant } from "../fixtures";
import { createByosNumber, eventually, randomNumber, unpaced } from "../fixtures-numbers";
import type { TestContext } from "../helpers";
import { startServer, stopServer } from "./realtime-client";

/**
 * The simulated phone's channel listener catches up on what it missed while its socket was down
 * (docs/events.md: `GET /api/events?after=` the last event it saw), as the companion app does: an
 * order sent meanwhile is not lost, and a fleet run does not report it LOST.
 */
let ctx: TestContext & { baseUrl: string; port: number };
beforeAll(async () => {
  ctx = await startServer();
  ctx.services.start();
}, 60_000);
afterAll(async () => {
  await stopServer(ctx);
});

test("an order sent while the phone's socket was down reaches it once it is back", async () => {
  const t = await createTenant(ctx.sql, { plan: "pro" });
  const byos = await createByosNumber(ctx.sql, t.org.id, { online: true });
  await unpaced(ctx.sql, t.org.id);
  const orders: SendEvent[] = [];
  const api = createApi({ baseUrl: ctx.baseUrl, token: t.token });
  const l = await listenDeviceChannel(api, byos.deviceId, { onSend: (o) => orders.push(o) });
  await l.subscribed;
  const send = async (text: string) =>
    (await ctx.request("POST", "/api/messages", { token: t.token, body: { hosted_sim: byos.hostedSimId, to: randomNumber(), text } })).body.data.id as number;
  const before = await send("while connected");
  await eventually(() => orders.some((o) => o.message.id === before), 10_000, "the first order");
  // Off the network: the server still counts the phone online and hands it the next order.
  l.pusher.disconnect();
  const missed = await send("while the socket was down");
  await eventually(async () => (await ctx.sql`select 1 from messages where id = ${missed} and dispatched_at is not null`).length > 0);
  expect(orders.some((o) => o.message.id === missed)).toBe(false);
  l.pusher.connect();
  await eventually(() => orders.some((o) => o.message.id === missed), 10_000, "the missed order, caught up");
  expect(orders.filter((o) => o.message.id === before)).toHaveLength(1);
  l.close();
}, 60_000);
