import type { DeviceRow, SimCardRow } from "./store";

const iso = (d: Date | string | null) => (d === null ? null : new Date(d).toISOString());

/** SPEC.md 2.10 SIM card, with the number a re-verification waits for (null when none). */
export const presentSimCard = (c: SimCardRow) => ({
  id: c.id,
  phone_number: c.phone_number,
  pending_phone_number: c.claimed_number,
  sim_slot: c.sim_slot,
  status: c.status,
  signal_strength: c.signal_strength,
  is_active: c.status === "active",
  hosted_sim_id: c.hosted_sim_id,
  created_at: iso(c.created_at)!,
  updated_at: iso(c.updated_at)!,
});

/**
 * A SIM card whose number claim this request started (PATCH phone_number): the card as it is, its
 * number still the proven one, plus the code that proves the claimed number and where to send it.
 */
export const presentClaimingSimCard = (c: SimCardRow, providerNumber: string) => ({
  ...presentSimCard(c),
  verification_code: c.verification_code!,
  provider_number: providerNumber,
  code_expires_at: iso(c.code_expires_at)!,
});

/** A SIM card as the operations that issue a code show it (SPEC.md 2.10, last paragraph). */
export const presentIssuedSimCard = (c: SimCardRow, providerNumber: string) => ({
  id: c.id,
  sim_slot: c.sim_slot,
  phone_number: null,
  status: c.status,
  verification_code: c.verification_code!,
  provider_number: providerNumber,
  code_expires_at: iso(c.code_expires_at)!,
});

/** SPEC.md 2.9 device, as lists show it; `claimedCardId` names the card whose claim this request started. */
export function presentDevice(d: DeviceRow, cards: SimCardRow[], providerNumber: string, claimedCardId: number | null = null) {
  return {
    id: d.id,
    android_id: d.android_id,
    phone_number: d.phone_number,
    device_name: d.device_name,
    status: d.status,
    is_online: d.is_online,
    provider_number: providerNumber,
    sim_cards: cards.filter((c) => c.device_id === d.id).map((c) => (c.id === claimedCardId ? presentClaimingSimCard(c, providerNumber) : presentSimCard(c))),
    battery_level: d.battery_level,
    last_seen_at: iso(d.last_seen_at),
    created_at: iso(d.created_at)!,
  };
}

/** A device as the list shows it: SPEC.md 2.9 plus the organization it belongs to (the list spans the caller's organizations). */
export function presentDeviceListItem(d: DeviceRow, cards: SimCardRow[], providerNumber: string) {
  return { ...presentDevice(d, cards, providerNumber), organization: { id: d.organization_id, name: d.organization_name } };
}

/** The single-device view: SPEC.md 2.9 with its extra fields. */
export function presentDeviceDetail(d: DeviceRow, cards: SimCardRow[], providerNumber: string, claimedCardId: number | null = null) {
  return {
    ...presentDevice(d, cards, providerNumber, claimedCardId),
    device_model: d.device_model,
    app_version: d.app_version,
    config_version: d.config_version,
    messages_received_count: d.messages_received_count,
    organization: { id: d.organization_id, name: d.organization_name },
    updated_at: iso(d.updated_at)!,
  };
}

/** The register answer (SPEC.md 4.2): the device with its model, version and cards with their codes. */
export function presentRegistered(d: DeviceRow, cards: SimCardRow[], providerNumber: string) {
  return {
    ...presentDevice(d, [], providerNumber),
    device_model: d.device_model,
    app_version: d.app_version,
    sim_cards: cards.map((card) => presentIssuedSimCard(card, providerNumber)),
  };
}
