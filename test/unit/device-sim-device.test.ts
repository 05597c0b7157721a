import { afterAll, describe, expect, test } from "bun:test";
import { createApi, hostedSimOf } from "../../device-sim/api";
import { createDevice, type DeviceState } from "../../device-sim/device";
import { openOutbox } from "../../device-sim/outbox";
import { createRandom } from "../../device-sim/random";
import { createStats } from "../../device-sim/stats";

/** Just enough of the server (and of the provider) for one phone, with a switch for how SMS submissions are answered. */
function fakeServer() {
  const state = { sms: "ok" as "ok" | "down" | "revoked" | "unauthenticated", status: "pending_verification", card: "pending", stored: [] as string[] };
  const device = () => ({
    id: 1,
    android_id: "0123456789abcdef",
    status: state.status,
    provider_number: "+15005550006",
    sim_cards: [{ id: 10, sim_slot: 1, phone_number: null, status: state.card, verification_code: "SIM-AB2C", hosted_sim_id: 5 }],
  });
  const error = (status: number, code: string) => Response.json({ message: code, code }, { status });
  const server = Bun.serve({
    port: 0,
    routes: {
      "/sms": {
        POST: async (req) => {
          const { body } = (await req.json()) as { body: string };
          if (body === "SIM-AB2C") [state.card, state.status] = ["active", "active"];
          return Response.json({ sid: "SM1", callback_status: 200 }, { status: 201 });
        },
      },
      "/api/byos/devices/register": { POST: () => Response.json(device(), { status: 201 }) },
      "/api/byos/devices/1": () => Response.json({ data: device() }),
      "/api/byos/devices/1/config": () =>
        Response.json({
          intervals: { heartbeat_seconds: 60, config_refresh_seconds: 3600, retry_backoff_seconds: [1, 2] },
          device: {},
          limits: {},
          features: {},
          metadata: {},
        }),
      "/api/byos/devices/1/heartbeat": {
        POST: () => (state.status === "revoked" ? error(409, "invalid_state") : Response.json({ success: true, next_heartbeat_in: 60, server_time: "" })),
      },
      "/api/byos/devices/1/sms": {
        POST: async (req) => {
          const sms = (await req.json()) as { body: string; message_id: string };
          if (state.sms === "down") return error(503, "unavailable");
          if (state.sms === "unauthenticated") return error(401, "unauthenticated");
          if (state.sms === "revoked") return error(409, "invalid_state");
          state.stored.push(sms.body);
          return Response.json({ message: "queued", message_id: sms.message_id }, { status: 202 });
        },
      },
    },
  });
  return { url: `http://127.0.0.1:${server.port}`, state, stop: () => server.stop(true) };
}

/** Polls instead of sleeping a fixed time, so a loaded machine does not make the tests flaky. */
async function until(check: () => boolean, ms = 3000) {
  const deadline = Date.now() + ms;
  while (!check() && Date.now() < deadline) await Bun.sleep(10);
}

const servers: ReturnType<typeof fakeServer>[] = [];
afterAll(() => {
  for (const s of servers) s.stop();
});

async function startPhone() {
  const server = fakeServer();
  servers.push(server);
  const stats = createStats();
  const states: DeviceState[] = [];
  const refused: string[] = [];
  const device = createDevice({
    reg: { android_id: "0123456789abcdef", sim_slots: [1], numbers: ["+15551234567"], device_model: "Pixel 8", app_version: "2.0.0" },
    doze: false,
    api: createApi({ baseUrl: server.url, token: "t", stats }),
    providerUrl: server.url,
    outbox: openOutbox(),
    rng: createRandom(1),
    stats,
    // Backoff [1, 2] s from the config becomes 10 and 20 ms.
    timeScale: 0.01,
    events: { onState: (s) => void states.push(s), onRefused: (sms) => void refused.push(sms.body) },
  });
  await device.start();
  return { server, device, stats, states, refused };
}

describe("simulated device", () => {
  test("registers, verifies its SIM through the provider and becomes active", async () => {
    const { server, states, device } = await startPhone();
    expect(states).toEqual(["registering", "verifying", "active"]);
    expect(server.state.card).toBe("active");
    expect(hostedSimOf(device.snapshot().cards[0]!)).toBe(5);
    device.stop();
  });

  test("while the server answers 503 the SMS wait in the outbox; afterwards they arrive once each, in order", async () => {
    const { server, device, stats } = await startPhone();
    server.state.sms = "down";
    for (const body of ["one", "two", "three"]) device.receive({ body, from: "+15550001111" });
    await until(() => (stats.errors()["sms 503 unavailable"] ?? 0) > 1);
    expect(device.snapshot().pending).toBe(3);
    expect(stats.errors()["sms 503 unavailable"]).toBeGreaterThan(1);
    server.state.sms = "ok";
    await until(() => device.snapshot().pending === 0);
    expect(device.snapshot().pending).toBe(0);
    expect(server.state.stored).toEqual(["one", "two", "three"]);
    device.stop();
  });

  test("a 401 keeps the SMS queued instead of dropping it", async () => {
    const { server, device, refused } = await startPhone();
    server.state.sms = "unauthenticated";
    device.receive({ body: "keep me" });
    await Bun.sleep(80);
    expect(device.snapshot().pending).toBe(1);
    expect(refused).toEqual([]);
    server.state.sms = "ok";
    await until(() => server.state.stored.length > 0);
    expect(server.state.stored).toEqual(["keep me"]);
    device.stop();
  });

  test("revoked by its owner: submissions are refused, the device notices, drops its queue as refused and stops", async () => {
    const { server, device, refused, states } = await startPhone();
    server.state.sms = "revoked";
    server.state.status = "revoked";
    device.receive({ body: "after revoke" });
    await until(() => states.at(-1) === "revoked");
    expect(refused).toEqual(["after revoke"]);
    expect(states.at(-1)).toBe("revoked");
    expect(device.snapshot().pending).toBe(0);
  });
});
