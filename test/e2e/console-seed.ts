import { sendThroughProvider } from "../../device-sim/provider";
import { sessionFor } from "../fixtures";
import { randomAndroidId, randomSimNumber } from "../fixtures-devices";
import { eventually } from "../fixtures-numbers";
import type { ConsoleWorld } from "./console-helpers";

/** A phone of the organization registered, its SIM proven through the provider emulator, one heartbeat sent: as the app would. */
export async function activeDeviceIn(w: ConsoleWorld, orgId: number, name: string) {
  const [owner] = await w.ctx.sql<{ user_id: number }[]>`select user_id from memberships where organization_id = ${orgId} order by user_id limit 1`;
  const token = await sessionFor(w.ctx.sql, owner!.user_id);
  const call = async (path: string, body: unknown) => {
    const res = await fetch(`${w.base}${path}`, {
      method: "POST",
      headers: { authorization: `Bearer ${token}`, "content-type": "application/json", "x-organization-id": String(orgId) },
      body: JSON.stringify(body),
    });
    if (!res.ok) throw new Error(`${path}: ${res.status} ${await res.text()}`);
    return res.json() as Promise<any>;
  };
  const device = await call("/api/byos/devices/register", {
    android_id: randomAndroidId(),
    sim_slots: [1],
    device_model: "Pixel 8",
    app_version: "1.4.2",
    device_name: name,
  });
  const number = randomSimNumber();
  await sendThroughProvider(w.provider.url, { from: number, to: w.ctx.config.PROVIDER_NUMBER, body: `Verify ${device.sim_cards[0].verification_code}` });
  await eventually(async () => (await w.ctx.sql`select status from devices where id = ${device.id}`)[0]?.status === "active", 5000, "device active");
  await call(`/api/byos/devices/${device.id}/heartbeat`, { battery_level: 84, signal_strength: 4, sim_cards: [{ phone_number: number, signal_strength: 4 }] });
  return { id: device.id as number, number };
}
