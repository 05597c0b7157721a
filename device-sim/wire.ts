/**
 * Wire shapes of the API as the companion app sees them (SPEC.md 2.9-2.13, 4.2; API.md §3).
 * Written here from the contract, never imported from the server: the simulator is a client.
 */
export type ApiErrorBody = { message: string; code: string; errors?: Record<string, string[]>; device_id?: number };

export type LoginResult = { token: string; token_type?: string; expires_at?: string } | { "2fa_required": true; tmp_token: string };

export type SimCard = {
  id: number;
  sim_slot: number | null;
  phone_number: string | null;
  status: "pending" | "active" | "inactive";
  verification_code?: string;
  provider_number?: string;
  signal_strength?: number | null;
  hosted_sim_id?: number | null;
};

export type Device = {
  id: number;
  android_id: string;
  device_name?: string | null;
  device_model?: string;
  app_version?: string;
  phone_number?: string | null;
  status: "pending_verification" | "active" | "disabled" | "revoked";
  is_online?: boolean;
  provider_number: string;
  sim_cards: SimCard[];
  config_version?: number;
};

export type RegisterRequest = { android_id: string; sim_slots: number[]; device_model: string; app_version: string; device_name?: string };

export type DeviceConfig = {
  device: { id: number; phone_number: string | null; status: string };
  intervals: { heartbeat_seconds: number; config_refresh_seconds: number; retry_backoff_seconds: number[] };
  limits: Record<string, number>;
  features: Record<string, boolean>;
  metadata: { config_version: number; server_time: string; plan_name: string };
};

export type HeartbeatRequest = {
  battery_level: number;
  signal_strength: number;
  is_in_doze_mode: boolean;
  sim_cards?: { phone_number: string; signal_strength: number }[];
};
export type HeartbeatResponse = { success: boolean; next_heartbeat_in: number; server_time: string };

export type Message = {
  id: number;
  hosted_sim_id: number | null;
  direction: "inbound" | "outbound";
  from: string;
  to: string;
  text: string;
  status: string;
  source?: string;
  device_id?: number | null;
  received_at?: string | null;
};

export type Page<T> = { data: T[]; meta?: { current_page?: number; last_page?: number; total?: number; per_page?: number }; links?: { next?: string | null } };

export type ConnectionDetails = {
  broadcaster: string;
  key: string;
  ws_url?: string;
  ws_host: string;
  ws_port: number;
  ws_scheme: string;
  force_tls: boolean;
  auth_endpoint?: string;
};

/** `message.send` on private-device.{id}: an outbound SMS the phone must send. */
export type SendEvent = {
  id?: number;
  message_id?: number;
  message?: { id: number; to: string; text: string; sim_slot?: number | null };
  to?: string;
  text?: string;
  sim_slot?: number | null;
};
