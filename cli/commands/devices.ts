import { type Command, Option } from "commander";
import type { ApiAnswer } from "../../clients/api";
import { type ApiClient, createApiClient } from "../api-client";
import { globals, orgOption, positiveInt } from "../args";
import { colors, details, emit, statusColor, table } from "../output";
import { subscribe, untilStopped } from "../realtime";

const STATUSES = ["active", "disabled", "revoked", "pending_verification"] as const;
type DeviceStatus = (typeof STATUSES)[number];

type Device = ApiAnswer<"/api/byos/devices/{device}", "get">["data"];
type SimCard = Device["sim_cards"][number];
// GET /api/byos/devices documents no response schema yet: its items are the show route's device.
type DevicePage = { data: Device[]; links?: { next?: string | null } };

const paint = (s: string) => statusColor(s.trim()) + s.slice(s.trimEnd().length);
const online = (d: Device) => (d.is_online ? "online" : "offline");

const deviceColumns = [
  { header: "ID", value: (d: Device) => d.id },
  { header: "NAME", value: (d: Device) => d.device_name },
  { header: "PHONE", value: (d: Device) => d.phone_number },
  { header: "STATUS", value: (d: Device) => d.status, color: paint },
  { header: "ONLINE", value: online, color: paint },
  { header: "BATTERY", value: (d: Device) => (d.battery_level === null ? null : `${d.battery_level}%`) },
  { header: "SIMS", value: (d: Device) => d.sim_cards.map((c) => `${c.sim_slot ?? "?"}:${c.status}`).join(" ") || "-" },
  { header: "LAST SEEN", value: (d: Device) => d.last_seen_at },
];

const simColumns = [
  { header: "SIM", value: (c: SimCard) => c.id },
  { header: "SLOT", value: (c: SimCard) => c.sim_slot },
  { header: "NUMBER", value: (c: SimCard) => c.phone_number },
  { header: "STATUS", value: (c: SimCard) => c.status, color: paint },
  { header: "SIGNAL", value: (c: SimCard) => (c.signal_strength === null ? null : `${c.signal_strength}%`) },
  { header: "HOSTED SIM", value: (c: SimCard) => c.hosted_sim_id },
];

export const showDevice = (d: Device) =>
  [
    details([
      ["id", d.id],
      ["name", d.device_name],
      ["android id", d.android_id],
      ["phone", d.phone_number],
      ["status", statusColor(d.status)],
      ["online", statusColor(online(d))],
      ["battery", d.battery_level === null ? null : `${d.battery_level}%`],
      ["model", d.device_model],
      ["app version", d.app_version],
      ["config version", d.config_version],
      ["messages", d.messages_received_count],
      ["organization", d.organization ? `${d.organization.name} (${d.organization.id})` : null],
      ["last seen", d.last_seen_at],
      ["created", d.created_at],
    ]),
    "",
    colors.bold("SIM cards"),
    table(d.sim_cards, simColumns),
  ].join("\n");

/** Every page of the device list (the API pages by at most 100). */
async function listAllDevices(api: ApiClient, status?: DeviceStatus): Promise<Device[]> {
  const all: Device[] = [];
  for (let page = 1; ; page++) {
    const body = (await api.ok(api.GET("/api/byos/devices", { params: { query: { status, per_page: 100, page } } }))) as unknown as DevicePage;
    all.push(...body.data);
    if (!body.links?.next || body.data.length === 0) return all;
  }
}

function stateChange(devices: Command, name: "enable" | "disable" | "revoke", description: string) {
  orgOption(devices.command(name))
    .description(description)
    .argument("<device-id>", "device id", positiveInt)
    .action(async (id: number, _opts, cmd: Command) => {
      const o = globals(cmd);
      const api = createApiClient(o);
      const path = { device: id };
      if (name === "revoke") await api.ok(api.DELETE("/api/byos/devices/{device}", { params: { path } }));
      const body =
        name === "revoke"
          ? await api.ok(api.GET("/api/byos/devices/{device}", { params: { path } }))
          : await api.ok(api.POST(`/api/byos/devices/{device}/${name}`, { params: { path } }));
      emit(o, body, () => `Device ${id} is ${statusColor(body.data.status)}.`);
    });
}

export function registerDevices(program: Command): void {
  const devices = program.command("devices").description("BYOS devices (Android phones running the companion app)");

  orgOption(devices.command("list"))
    .description("devices of the organization, all pages")
    .addOption(new Option("--status <status>", "only this status").choices(STATUSES))
    .action(async (_opts, cmd: Command) => {
      const o = globals<{ status?: DeviceStatus }>(cmd);
      const data = await listAllDevices(createApiClient(o), o.status);
      emit(o, { data }, () => table(data, deviceColumns));
    });

  orgOption(devices.command("show"))
    .description("one device with its SIM cards")
    .argument("<device-id>", "device id", positiveInt)
    .action(async (id: number, _opts, cmd: Command) => {
      const o = globals(cmd);
      const api = createApiClient(o);
      const body = await api.ok(api.GET("/api/byos/devices/{device}", { params: { path: { device: id } } }));
      emit(o, body, () => showDevice(body.data));
    });

  stateChange(devices, "enable", "let a disabled device receive messages again");
  stateChange(devices, "disable", "stop a device from receiving messages");
  stateChange(devices, "revoke", "revoke a device for good: its SIM cards and numbers become inactive");

  orgOption(devices.command("watch"))
    .description("live table of the devices, updated as they go online, offline or change (--json: one event per line)")
    .option("--count <n>", "stop after this many events", positiveInt)
    .action(async (_opts, cmd: Command) => {
      const o = globals<{ count?: number }>(cmd);
      await watchDevices(createApiClient(o), o);
    });
}

const DEVICE_EVENTS = new Set(["device.status_changed", "device.updated", "sim.verified"]);

async function watchDevices(api: ApiClient, o: { json?: boolean; count?: number }) {
  const me = await api.ok(api.GET("/api/me"));
  const devices = new Map((await listAllDevices(api)).map((d) => [d.id, d]));
  const live = Boolean(process.stdout.isTTY) && !o.json;
  const render = (note: string) => {
    const rows = [...devices.values()].sort((a, b) => a.id - b.id);
    process.stdout.write(`\x1b[2J\x1b[H${colors.bold(me.organization.name)}  ${colors.dim(note)}\n${table(rows, deviceColumns)}\n`);
  };
  const stop = untilStopped();
  let events = 0;
  let queue = Promise.resolve();
  const onEvent = (_channel: string, event: string, data: { device_id?: number; status?: string; is_online?: boolean; last_seen_at?: string | null }) => {
    if (!DEVICE_EVENTS.has(event) || typeof data?.device_id !== "number") return;
    const id = data.device_id;
    // Status events carry the new state; other changes are read back from the API, in order.
    queue = queue
      .then(async () => {
        const known = devices.get(id);
        if (event === "device.status_changed" && known) {
          devices.set(id, {
            ...known,
            status: data.status ?? known.status,
            is_online: data.is_online ?? known.is_online,
            last_seen_at: data.last_seen_at ?? known.last_seen_at,
          });
        } else {
          const body = await api.ok(api.GET("/api/byos/devices/{device}", { params: { path: { device: id } } }));
          devices.set(id, body.data);
        }
        const d = devices.get(id)!;
        if (live) render(`${event} device ${id} at ${new Date().toISOString()}; Ctrl-C to stop`);
        else if (o.json) console.log(JSON.stringify({ event, data, device: d }));
        else console.log(`${new Date().toISOString()}  ${event}  device ${id}  ${d.status}  ${online(d)}`);
        if (o.count && ++events >= o.count) stop.done();
      })
      .catch((e: Error) => {
        process.stderr.write(`${e.message}\n`);
      });
  };
  const subscription = await subscribe(api, [`private-organization.${me.organization.id}`], onEvent);
  try {
    await subscription.subscribed;
    if (live) render("waiting for changes; Ctrl-C to stop");
    else process.stderr.write(`Watching the devices of ${me.organization.name}; Ctrl-C to stop.\n`);
    await stop.stopped;
    await queue;
  } finally {
    subscription.close();
  }
}
