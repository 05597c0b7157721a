import { type Command, Option } from "commander";
import { type ApiClient, createApiClient } from "../api-client";
import { globals, orgOption, positiveInt } from "../args";
import { colors, details, emit, statusColor, table } from "../output";

const STATUSES = ["active", "disabled", "revoked", "pending_verification"];

type SimCard = {
  id: number;
  phone_number: string | null;
  sim_slot: number | null;
  status: string;
  signal_strength: number | null;
  hosted_sim_id: number | null;
};
type Device = {
  id: number;
  android_id: string;
  phone_number: string | null;
  device_name: string | null;
  status: string;
  is_online: boolean;
  sim_cards: SimCard[];
  battery_level: number | null;
  last_seen_at: string | null;
  created_at: string;
  device_model?: string;
  app_version?: string;
  config_version?: number;
  messages_received_count?: number;
  organization?: { id: number; name: string };
};
type Page<T> = { data: T[]; meta: { current_page: number; last_page: number; total: number }; links: { next: string | null } };

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
async function listAllDevices(api: ApiClient, status?: string): Promise<Device[]> {
  const all: Device[] = [];
  for (let page = 1; ; page++) {
    const { body } = await api.get<Page<Device>>("/api/byos/devices", { query: { status, per_page: 100, page } });
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
      if (name === "revoke") await api.delete(`/api/byos/devices/${id}`);
      const { body } =
        name === "revoke" ? await api.get<{ data: Device }>(`/api/byos/devices/${id}`) : await api.post<{ data: Device }>(`/api/byos/devices/${id}/${name}`);
      emit(o, body, () => `Device ${id} is ${statusColor(body.data.status)}.`);
    });
}

export function registerDevices(program: Command): void {
  const devices = program.command("devices").description("BYOS devices (Android phones running the companion app)");

  orgOption(devices.command("list"))
    .description("devices of the organization, all pages")
    .addOption(new Option("--status <status>", "only this status").choices(STATUSES))
    .action(async (_opts, cmd: Command) => {
      const o = globals<{ status?: string }>(cmd);
      const data = await listAllDevices(createApiClient(o), o.status);
      emit(o, { data }, () => table(data, deviceColumns));
    });

  orgOption(devices.command("show"))
    .description("one device with its SIM cards")
    .argument("<device-id>", "device id", positiveInt)
    .action(async (id: number, _opts, cmd: Command) => {
      const o = globals(cmd);
      const { body } = await createApiClient(o).get<{ data: Device }>(`/api/byos/devices/${id}`);
      emit(o, body, () => showDevice(body.data));
    });

  stateChange(devices, "enable", "let a disabled device receive messages again");
  stateChange(devices, "disable", "stop a device from receiving messages");
  stateChange(devices, "revoke", "revoke a device for good: its SIM cards and numbers become inactive");
}
