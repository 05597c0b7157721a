import type { Caller } from "../auth/caller";
import type { Sql } from "../db/client";
import { permissionDenied } from "../errors";
import { CHANNEL_KINDS, CHANNEL_PREFIX, type ChannelKind } from "../events/catalog";
import { userDeviceOrganization, userNumberOrganization, userOrganizationMember, userTeamOrganization } from "./store";

/** The channels of API.md §3 "Realtime" (the event catalog names them). Public and presence channels are not offered. */
export { CHANNEL_KINDS, type ChannelKind };

const channelRe = new RegExp(`^${CHANNEL_PREFIX}(${CHANNEL_KINDS.join("|")})\\.([1-9]\\d{0,14})$`);
/** Pusher's own limit on channel names: 164 characters of this alphabet. */
const pusherNameRe = /^[A-Za-z0-9_\-=@,.;]{1,164}$/;

export function parseChannel(name: string): { kind: ChannelKind; id: number } | null {
  const m = channelRe.exec(name);
  return m ? { kind: m[1] as ChannelKind, id: Number(m[2]) } : null;
}

export const isValidChannelName = (name: unknown): name is string => typeof name === "string" && pusherNameRe.test(name);

/**
 * Why a channel cannot be joined at all, whoever asks; null when it is one of ours.
 * Used by the socket (before the signature) and by the auth endpoint.
 */
export function channelRefusal(name: string): string | null {
  if (!isValidChannelName(name)) return "Invalid channel name.";
  if (!name.startsWith(CHANNEL_PREFIX)) return "Public channels are not available; subscribe to a private channel.";
  if (!parseChannel(name)) return `Unknown channel ${name}.`;
  return null;
}

/**
 * The organization on whose behalf the caller joins the channel (it decides which events on a
 * shared number the subscription receives), or 403 `permission_denied`.
 * Users: their organizations, those organizations' teams, devices and attached numbers.
 * API keys: `private-organization.{own organization}` only.
 */
export async function authorizeChannel(sql: Sql, caller: Caller, name: string): Promise<number> {
  const refusal = channelRefusal(name);
  if (refusal) throw permissionDenied(refusal);
  const { kind, id } = parseChannel(name)!;
  const denied = () => permissionDenied(`You may not join ${name}.`);
  if (!caller.user) {
    if (kind === "organization" && id === caller.organization.id) return id;
    throw denied();
  }
  const userId = caller.user.id;
  const org =
    kind === "organization"
      ? await userOrganizationMember(sql, userId, id)
      : kind === "team"
        ? await userTeamOrganization(sql, userId, id)
        : kind === "device"
          ? await userDeviceOrganization(sql, userId, id)
          : await userNumberOrganization(sql, userId, id, caller.organization.id);
  if (org === null) throw denied();
  return org;
}
