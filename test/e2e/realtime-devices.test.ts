import { afterAll, beforeAll, expect, test } from "bun:test";
import { randomBytes } from "node:crypto";
import type Pusher from "pusher-js";
import { createTenant } from "../fixtures";
import type { TestContext } from "../helpers";
import { awaitCallback, type ConnectionDetails, connectPusher, startServer, stopServer, subscribed } from "./realtime-client";

let ctx: TestContext & { baseUrl: string };
let pusher: Pusher | undefined;

beforeAll(async () => {
  // A device is offline one second after its last heartbeat.
  ctx = await startServer({ OFFLINE_AFTER_SECONDS: "1", DOZE_OFFLINE_AFTER_SECONDS: "2", HEARTBEAT_SECONDS: "1" });
  ctx.services.start();
}, 60_000);

afterAll(async () => {
  pusher?.disconnect();
  await stopServer(ctx);
});

test("pusher-js receives device.status_changed when a device comes online by heartbeat and when it goes offline", async () => {
  const { org, token } = await createTenant(ctx.sql);
  const api = async (method: string, path: string, body?: unknown) => {
    const res = await fetch(`${ctx.baseUrl}${path}`, {
      method,
      headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    return { status: res.status, body: (await res.json()) as any };
  };
  const registered = await api("POST", "/api/byos/devices/register", {
    android_id: randomBytes(8).toString("hex"),
    sim_slots: [1],
    device_model: "Pixel 8",
    app_version: "1.0.0",
  });
  expect(registered.status).toBe(201);
  const deviceId = registered.body.id ?? registered.body.data?.id;

  const details = (await api("GET", "/api/broadcasting/connection")).body as ConnectionDetails;
  pusher = connectPusher(ctx.baseUrl, details, token);
  const deviceChannel = await subscribed(pusher, `private-device.${deviceId}`);
  const orgChannel = await subscribed(pusher, `private-organization.${org.id}`);
  const events: any[] = [];
  deviceChannel.bind("device.status_changed", (e: any) => events.push(e));
  const online = awaitCallback<any>("online event", (done) => orgChannel.bind("device.status_changed", (e: any) => e.is_online && done(e)), 10_000);
  const offline = awaitCallback<any>("offline event", (done) => orgChannel.bind("device.status_changed", (e: any) => !e.is_online && done(e)), 10_000);

  expect((await api("POST", `/api/byos/devices/${deviceId}/heartbeat`, { battery_level: 90 })).status).toBe(200);
  expect(await online).toMatchObject({ device_id: deviceId, organization_id: org.id, is_online: true });
  expect(await offline).toMatchObject({ device_id: deviceId, organization_id: org.id, is_online: false });
  // The device channel saw the same two transitions, in order.
  expect(events.map((e) => e.is_online)).toEqual([true, false]);
}, 30_000);
