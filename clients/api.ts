import type { components, paths } from "./api-types.generated";

/**
 * What the project's own clients (cli/, device-sim/) know of the API: the types generated from
 * the OpenAPI document (api-types.generated.ts), plus helpers to name a route's bodies. Nothing
 * here is written by hand from the contract: a route change shows up as a type error.
 */
export type { paths };

/** The media type the clients send and read. */
export type Json = "application/json";

type Method = "get" | "post" | "put" | "patch" | "delete";
type Operation<P extends keyof paths, M extends Method> = NonNullable<paths[P][M & keyof paths[P]]>;
type Responses<P extends keyof paths, M extends Method> = Operation<P, M> extends { responses: infer R } ? R : never;
type JsonContent<R> = R extends { content: { "application/json": infer B } } ? B : never;

/** The JSON body route `M P` answers with `S` (by default its 200 or 201). */
export type ApiAnswer<P extends keyof paths, M extends Method, S extends number = 200 | 201> = JsonContent<Responses<P, M>[S & keyof Responses<P, M>]>;

/** The JSON body route `M P` takes. */
export type ApiBody<P extends keyof paths, M extends Method> = Operation<P, M> extends { requestBody?: infer B } ? JsonContent<NonNullable<B>> : never;

/** Every non-2xx answer (the error shape of the document's description). */
export type ApiErrorBody = components["schemas"]["Error"];

/** The query parameters route `M P` takes. */
export type ApiQuery<P extends keyof paths, M extends Method> = Operation<P, M> extends { parameters: { query?: infer Q } } ? NonNullable<Q> : never;

/**
 * Event payloads: the catalog's payload schemas as the OpenAPI document lists them
 * (`components.schemas["Event.<type>"]`, from server/events/payloads.ts). One payload per type,
 * whichever way it arrives: `data` of GET /api/events and of a webhook delivery, and realtime
 * `data` plus its `event_id`.
 */
type EventSchemaName = Extract<keyof components["schemas"], `Event.${string}`>;
export type EventType = EventSchemaName extends `Event.${infer T}` ? T : never;
export type EventPayload<T extends EventType> = components["schemas"][`Event.${T}`];
/** What a pusher-js client receives for an event of type `T` (on the catalog's realtime name). */
export type RealtimePayload<T extends EventType> = EventPayload<T> & { event_id: string };

type ListedEvent = ApiAnswer<"/api/events", "get">["data"][number];
/** An event of GET /api/events whose `data` is typed by its `type` (narrow on `type`). */
export type LoggedEvent = { [T in EventType]: Omit<ListedEvent, "type" | "data"> & { type: T; data: EventPayload<T> } }[EventType];
/** The listed event as the union its `type` decides (the document types `data` loosely, one schema for every type). */
export const asLoggedEvent = (e: ListedEvent) => e as unknown as LoggedEvent;
