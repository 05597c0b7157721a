/**
 * Event types as the console's webhook pages offer them. The list itself is generated from the
 * server's catalog (console/webhook-event-types.ts, `bun run events:docs`): the console bundle
 * imports no server module.
 */
export { WEBHOOK_EVENT_TYPES } from "./webhook-event-types";

export const ALL_EVENTS = "*";
export const DEFAULT_EVENT_TYPES = ["message.received"];

/** How a list of subscribed types reads: "all events" for ["*"]. */
export function describeEventTypes(types: string[]): string {
  if (types.includes(ALL_EVENTS)) return "all events";
  return types.length === 0 ? "none" : types.join(", ");
}
