import type { Caller } from "../auth/caller";
import { permissionDenied } from "../errors";
import { EVENT_FAMILIES, EVENT_TYPES, type EventType, isEventType, permissionFor } from "./catalog";

/** The permissions of which an API key needs at least one to call `GET /api/events`. */
export const EVENT_PERMISSIONS = [...new Set(Object.values(EVENT_FAMILIES))];

/** The names in a `types` query value (checked by its schema, or raw before validation). */
export const typeNames = (raw: string) => raw.split(",").map((name) => name.trim());

/**
 * Every `types` of the query, as one list: `types=a&types=b` asks for both, as `types=a,b` does
 * (the parsed query keeps only the last; filtered by it, the others' events went missing without
 * a word). Undefined without any.
 */
export function requestedTypes(request: Request): string | undefined {
  const all = new URL(request.url).searchParams.getAll("types");
  return all.length === 0 ? undefined : all.join(",");
}

/**
 * `refine` of the route's rule, before validation: an API key naming in `types` an event type
 * whose family it holds no permission for is refused (403), whatever else the request says.
 * Names that are no event type are left to validation (422).
 */
export function refuseUnheldTypes(caller: Caller, request: Request): void {
  const key = caller.apiKey;
  if (!key) return;
  const refused = typeNames(requestedTypes(request) ?? "")
    .filter(isEventType)
    .filter((type) => !key.permissions.includes(permissionFor(type)));
  if (refused.length > 0) {
    const needed = [...new Set(refused.map(permissionFor))].join(", ");
    throw permissionDenied(`This API key lacks the ${needed} permission needed to read ${refused.join(", ")} events.`);
  }
}

/**
 * The types a caller reads: those it asked for, else every type; an API key only those of the
 * families its permissions cover (docs/api-notes.md "Reading the event log"). null: no filter.
 */
export function readableTypes(caller: Caller, requested: string | undefined): EventType[] | null {
  const asked = requested === undefined ? null : [...new Set(typeNames(requested) as EventType[])];
  const key = caller.apiKey;
  if (!key) return asked;
  const held = (asked ?? EVENT_TYPES).filter((type) => key.permissions.includes(permissionFor(type)));
  return asked === null && held.length === EVENT_TYPES.length ? null : held;
}
