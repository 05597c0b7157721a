import { fixSchema } from "../lib/openapi";
import { CATALOG, EVENT_TYPES, type EventSpec, permissionFor } from "./catalog";

type Doc = { components?: { schemas?: Record<string, unknown> } } & Record<string, unknown>;

/** The component name of an event type's payload: `Event.message.received`. */
export const eventSchemaName = (type: string) => `Event.${type}`;

/**
 * Lists every event payload in the OpenAPI document so receivers can generate types: each as
 * `components.schemas["Event.<type>"]`, and under `x-webhooks` (OpenAPI 3.1's `webhooks`, which a
 * 3.0 document cannot carry; /docs/openapi-3.1.json serves it as `webhooks`, server/docs/openapi-31.ts:
 * docs/api-notes.md "Event payloads in the OpenAPI document") as the body a webhook receiver gets,
 * `{ id, type, created_at, data }`: every type but the commands to a device, which no webhook receives.
 */
export function addEventPayloads<T extends Doc>(doc: T): T {
  doc.components ??= {};
  doc.components.schemas ??= {};
  const webhooks: Record<string, unknown> = {};
  for (const type of EVENT_TYPES) {
    const spec: EventSpec = CATALOG[type];
    const name = eventSchemaName(type);
    doc.components.schemas[name] = fixSchema(JSON.parse(JSON.stringify(spec.payload)));
    // A command to a device goes to its realtime channel only: no webhook receives it.
    if (spec.command) continue;
    webhooks[type] = {
      post: {
        summary: `${type}: ${spec.cause}`,
        description: `A row for ${spec.audience}. Realtime: ${spec.realtime ? `\`${spec.realtime}\` (data = payload + event_id)` : "not delivered"}. API keys read it with \`${permissionFor(type)}\`.`,
        requestBody: {
          required: true,
          content: {
            "application/json": {
              schema: {
                type: "object",
                required: ["id", "type", "created_at", "data"],
                properties: {
                  id: { type: "string", description: "the event id: its log cursor (also the webhook-id header and realtime event_id)" },
                  type: { type: "string", enum: [type] },
                  created_at: { type: "string", format: "date-time" },
                  data: { $ref: `#/components/schemas/${name}` },
                },
              },
            },
          },
        },
        responses: { "200": { description: "Any 2xx acknowledges the event" } },
      },
    };
  }
  (doc as Record<string, unknown>)["x-webhooks"] = webhooks;
  return doc;
}
