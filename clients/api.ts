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
