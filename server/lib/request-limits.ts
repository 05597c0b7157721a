import { AppError } from "../errors";

/**
 * How much a request may carry, checked when it arrives: before routing, authentication,
 * parsing or any other work (API.md §1 `payload_too_large`, docs/api-notes.md "Request limits").
 */
export type RequestLimits = { bodyBytes: number; headerBytes: number };

/**
 * Bun's own limits, the backstops behind ours. Headers: Bun answers 431 with an empty body past
 * `--max-http-header-size` (16 KiB unless raised), so server/runtime.sh raises it to this and our
 * smaller limit answers first, in the error shape. Bodies: past `maxRequestBodySize` Bun answers
 * 413 with an empty body before the application sees the request; below it, ours does.
 */
export const BUN_HEADER_BYTES = 256 * 1024;
export const BUN_BODY_BYTES = 128 * 1024 * 1024;

const size = (bytes: number) => (bytes % 1024 === 0 ? `${bytes / 1024} KiB` : `${bytes} bytes`);

export const payloadTooLarge = (limit: number) =>
  new AppError(413, "payload_too_large", `The request body is larger than this server accepts (${size(limit)}).`, { headers: { connection: "close" } });
export const headersTooLarge = (limit: number) =>
  new AppError(413, "payload_too_large", `The request's URL and headers are larger than this server accepts (${size(limit)} in all).`, {
    headers: { connection: "close" },
  });

/** Header bytes as they travel: `name: value\r\n` per field (forEach: no [name, value] pair per field). */
export function headerBytes(headers: Headers): number {
  let total = 0;
  headers.forEach((value, name) => {
    total += name.length + value.length + 4;
  });
  return total;
}

/**
 * How deep a JSON body may nest (objects and arrays in one another). The deepest body a route
 * takes nests 4 levels (a bulk send's recipients and their variables); a 64 KiB body can nest
 * 30,000, which every recursive walk of the body (the NUL check, hashing, cloning) would answer
 * with a stack overflow, a 500.
 */
export const MAX_BODY_DEPTH = 32;

/**
 * The top-level field (or `body`, for a body that is not an object) under which `body` nests
 * deeper than MAX_BODY_DEPTH levels, or null. Iterative, so no depth can overflow it.
 */
export function tooDeep(body: unknown): string | null {
  if (typeof body !== "object" || body === null) return null;
  if (Array.isArray(body)) return deeperThan(body, MAX_BODY_DEPTH) ? "body" : null;
  for (const field in body) if (deeperThan((body as Record<string, unknown>)[field], MAX_BODY_DEPTH - 1)) return field;
  return null;
}

function deeperThan(value: unknown, levels: number): boolean {
  if (typeof value !== "object" || value === null) return false;
  const values: unknown[] = [value];
  const depths: number[] = [1];
  while (values.length > 0) {
    const v = values.pop() as object;
    const depth = depths.pop()!;
    if (depth > levels) return true;
    for (const child of Array.isArray(v) ? v : Object.values(v))
      if (typeof child === "object" && child !== null) {
        values.push(child);
        depths.push(depth + 1);
      }
  }
  return false;
}

/**
 * The error a request is refused with before anything reads it, or null. A body of unknown
 * length (chunked) cannot be judged up front: it is read through a counter that fails the read
 * with 413 once it passes the limit, whoever reads it (Elysia's parsers, a route reading the
 * form by hand), so no more than the limit is ever held.
 */
export function checkRequest(request: Request, limits: RequestLimits): AppError | null {
  // The URL travels in the request line, before the headers, and is limited with them.
  if (request.url.length + headerBytes(request.headers) > limits.headerBytes) return headersTooLarge(limits.headerBytes);
  const header = request.headers.get("content-length");
  const declared = header !== null && /^\d+$/.test(header) ? Number(header) : null;
  if (declared !== null && declared > limits.bodyBytes) return payloadTooLarge(limits.bodyBytes);
  // With a Content-Length within the limit, HTTP framing already bounds what can be read.
  if ((declared === null || request.headers.has("transfer-encoding")) && request.body) countBody(request, limits.bodyBytes);
  return null;
}

function counter(limit: number) {
  let seen = 0;
  return new TransformStream<Uint8Array, Uint8Array>({
    transform(chunk, controller) {
      seen += chunk.byteLength;
      if (seen > limit) controller.error(payloadTooLarge(limit));
      else controller.enqueue(chunk);
    },
  });
}

/**
 * Every way of reading `request`'s body now reads it through the counter. The Request object
 * itself stays (Bun's `server.requestIP` knows the client by it), its readers are shadowed.
 */
function countBody(request: Request, limit: number) {
  const original = request.body as ReadableStream<Uint8Array>;
  let counted: ReadableStream<Uint8Array> | undefined;
  const body = () => {
    counted ??= original.pipeThrough(counter(limit));
    return counted;
  };
  const type = request.headers.get("content-type");
  const asResponse = () => new Response(body(), type ? { headers: { "content-type": type } } : {});
  const reader = (read: (r: Response) => Promise<unknown>) => ({ configurable: true, value: () => read(asResponse()) });
  Object.defineProperties(request, {
    body: { configurable: true, get: body },
    text: reader((r) => r.text()),
    json: reader((r) => r.json()),
    arrayBuffer: reader((r) => r.arrayBuffer()),
    bytes: reader((r) => r.bytes()),
    blob: reader((r) => r.blob()),
    formData: reader((r) => r.formData()),
  });
}
