import { DEVICE_COMMANDS, EVENT_TYPES, type EventType, event, isEventType } from "../events/catalog";

/** Subscribes an integration to every deliverable event type, present and future. */
export const ALL_EVENTS = "*";
/** What integrations created before event types existed got, and what a create without `event_types` gets. */
export const DEFAULT_EVENT_TYPES: string[] = [event.messageReceived.type];

/**
 * Types of the catalog that the log never delivers to webhooks: the commands to a device (the
 * message's own events are message.scheduled ... expired), and `webhook.test` goes only to the
 * integration it tests, sent by its test route.
 */
export const NOT_FROM_LOG: readonly EventType[] = [...DEVICE_COMMANDS, event.webhookTest.type];

/** Types an integration may subscribe to. */
export const SUBSCRIBABLE: readonly string[] = EVENT_TYPES.filter((t) => !NOT_FROM_LOG.includes(t));

/** Problems with a requested list of event types, keyed as API.md §1 wants (`event_types.<i>`). */
export function eventTypeErrors(types: string[]): Record<string, string[]> {
  const errors: Record<string, string[]> = {};
  types.forEach((t, i) => {
    if (t === ALL_EVENTS) return;
    if (DEVICE_COMMANDS.includes(t as EventType))
      errors[`event_types.${i}`] = [`names ${t}, a command to a device, not a webhook event; subscribe to message.queued or message.cancelled`];
    else if (t === event.webhookTest.type)
      errors[`event_types.${i}`] = [`names ${t}, which only the test route sends (to the integration it tests); no subscription is needed`];
    // Read after "The event_types.0 field" in the error's message.
    else if (!isEventType(t)) errors[`event_types.${i}`] = [`names an unknown event type "${t}"; known: ${SUBSCRIBABLE.join(", ")} or *`];
  });
  return errors;
}

/** The stored form: duplicates dropped, and `*` alone when present (it covers every other type). */
export function normalizeEventTypes(types: string[]): string[] {
  return types.includes(ALL_EVENTS) ? [ALL_EVENTS] : [...new Set(types)];
}
