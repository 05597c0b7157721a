/**
 * Elysia writes an OpenAPI 3.0.3 document with a few JSON-Schema-2020 habits that 3.0 does not
 * allow (`type: "null"`, `const`, responses without a description). This rewrites them into valid 3.0
 * (`nullable: true`, one-value `enum`), so generators, validators and our breaking-change guard can read it.
 */
import { bodyMediaTypes } from "./body-rules";

type Node = Record<string, unknown>;

// Children are rewritten first, so a null member of a union may already read `{ nullable, enum: [null] }`.
const isNull = (s: unknown) =>
  typeof s === "object" &&
  s !== null &&
  ((s as Node).type === "null" ||
    ((s as Node).nullable === true &&
      (s as Node).type === undefined &&
      Array.isArray((s as Node).enum) &&
      ((s as Node).enum as unknown[]).length === 1 &&
      ((s as Node).enum as unknown[])[0] === null));

export function fixSchema(schema: unknown): unknown {
  if (Array.isArray(schema)) return schema.map(fixSchema);
  if (typeof schema !== "object" || schema === null) return schema;
  const node: Node = {};
  for (const [k, v] of Object.entries(schema)) node[k] = fixSchema(v);
  for (const key of ["anyOf", "oneOf"] as const) {
    const options = node[key] as unknown[] | undefined;
    if (!options?.some(isNull)) continue;
    const rest = options.filter((o) => !isNull(o));
    delete node[key];
    if (rest.length === 1) Object.assign(node, rest[0] as Node);
    else if (rest.length > 1) node[key] = rest;
    node.nullable = true;
  }
  // A union of one-value literals of one type is an enum (and `nullable` needs a `type` beside it in 3.0).
  const literals = node.anyOf as Node[] | undefined;
  if (literals?.length && literals.every((o) => Array.isArray(o.enum) && Object.keys(o).length === 2 && o.type === literals[0]!.type)) {
    delete node.anyOf;
    Object.assign(node, { type: literals[0]!.type, enum: literals.flatMap((o) => o.enum as unknown[]) });
  }
  if (node.patternProperties) {
    // Records: one value schema for any key.
    node.additionalProperties = Object.values(node.patternProperties as Node)[0] ?? true;
    delete node.patternProperties;
  }
  if (Array.isArray(node.examples)) {
    node.example = node.examples[0];
    delete node.examples;
  }
  // What null means for an optional request field (server/lib/fields.ts `Optional`), in words.
  if (node["x-null-means"]) {
    const note = node["x-null-means"] === "absent" ? "null: the same as leaving it out" : "null clears it";
    if (typeof node.description !== "string") node.description = note;
    else if (!node.description.endsWith(note)) node.description = `${node.description}; ${note}`;
  }
  // Our validation messages (server/lib/validation.ts), not part of the schema a client reads.
  delete node.errorMessage;
  for (const key of ["$id", "$schema", "exclusiveMinimum", "exclusiveMaximum"] as const) {
    // 2020 numeric exclusive bounds become 3.0's boolean form.
    if ((key === "exclusiveMinimum" || key === "exclusiveMaximum") && typeof node[key] === "number") {
      node[key === "exclusiveMinimum" ? "minimum" : "maximum"] = node[key];
      node[key] = true;
    } else if (key === "$id" || key === "$schema") delete node[key];
  }
  if ("const" in node) {
    node.enum = [node.const];
    delete node.const;
  }
  if (node.type === "null") {
    delete node.type;
    node.nullable = true;
    node.enum = [null];
  }
  return node;
}

const errorAnswer = (description: string) => ({ description, content: { "application/json": { schema: { $ref: "#/components/schemas/Error" } } } });

/** Answers every route can give before it runs (server/lib/request-limits.ts). */
function addLimitAnswers(op: Node) {
  const responses = (op.responses ??= {}) as Record<string, Node>;
  responses["413"] ??= errorAnswer(
    op.requestBody
      ? "payload_too_large: the body (MAX_BODY_BYTES, 64 KiB by default) or the headers (MAX_HEADER_BYTES, 16 KiB) are over the server's limit"
      : "payload_too_large: the headers are over the server's limit (MAX_HEADER_BYTES, 16 KiB by default)",
  );
}

/**
 * The media types a route takes (server/lib/body-rules.ts), not Elysia's default list (which
 * also names form data and text/plain, read as something else than the route expects), and the
 * 415 its other types answer.
 */
function restrictBody(op: Node) {
  const content = (op.requestBody as Node | undefined)?.content as Record<string, Node> | undefined;
  const json = content?.["application/json"];
  if (!json) return;
  const types = bodyMediaTypes(op);
  (op.requestBody as Node).content = Object.fromEntries(types.map((type) => [type, json]));
  const responses = (op.responses ??= {}) as Record<string, Node>;
  responses["415"] ??= errorAnswer(
    `unsupported_media_type: the body is not ${types.join(" or ")} (check the Content-Type header), or is sent with a Content-Encoding other than identity`,
  );
}

/** Operations that take an Idempotency-Key (server/lib/idempotency.ts) say so, with the answers it adds. */
function addIdempotency(op: Node) {
  if (op["x-simhost-idempotent"] !== true) return;
  const parameters = (op.parameters ??= []) as Node[];
  if (!parameters.some((p) => p.name === "Idempotency-Key")) {
    parameters.push({
      name: "Idempotency-Key",
      in: "header",
      required: false,
      description:
        "Any 1 to 255 visible ASCII characters, new for each new request (a UUID). A retry with the same key and body within 24 h answers the first answer again (header Idempotent-Replayed: true) without doing the work twice.",
      schema: { type: "string", minLength: 1, maxLength: 255 },
    });
  }
  const responses = (op.responses ??= {}) as Record<string, Node>;
  responses["409"] ??= errorAnswer("request_in_progress: a request with this Idempotency-Key is still running (Retry-After: 1)");
  const unprocessable = responses["422"];
  if (unprocessable && typeof unprocessable.description === "string" && !unprocessable.description.includes("idempotency_key_reused")) {
    unprocessable.description += "; idempotency_key_reused: the Idempotency-Key was used with another request";
  } else responses["422"] ??= errorAnswer("idempotency_key_reused: the Idempotency-Key was used with another request");
}

const LENGTHS =
  " Text lengths (minLength, maxLength) count Unicode code points: an emoji is one character. An optional request field may be sent as null: its description says whether null means the same as leaving it out or clears the value.";

export function toOpenApi30<T extends { paths?: Record<string, Record<string, Node>> }>(doc: T): T {
  const info = (doc as Node).info as Node | undefined;
  if (info && typeof info.description === "string" && !info.description.includes(LENGTHS)) info.description += LENGTHS;
  for (const item of Object.values(doc.paths ?? {})) {
    for (const op of Object.values(item)) {
      const responses = (op.responses ?? {}) as Record<string, Node>;
      for (const [status, response] of Object.entries(responses)) {
        let fixed = fixSchema(response) as Node;
        // A union response schema also comes out bare beside its content: keep the content.
        if (fixed.content && !fixed.$ref) {
          const { content, description } = fixed;
          // Answers are JSON; Elysia also lists form data and text/plain, which no answer is.
          const json = (content as Record<string, unknown>)["application/json"];
          fixed = { description, content: json ? { "application/json": json } : content };
        } else if (!fixed.$ref && (fixed.anyOf || fixed.oneOf || fixed.type || fixed.properties)) {
          fixed = { content: { "application/json": { schema: fixed } } };
        }
        if (!fixed.$ref && fixed.description === undefined) fixed.description = status.startsWith("2") ? "Success" : "Error";
        responses[status] = fixed;
      }
      if (op.requestBody) op.requestBody = fixSchema(op.requestBody);
      if (op.parameters) op.parameters = fixSchema(op.parameters);
      restrictBody(op);
      addLimitAnswers(op);
      addIdempotency(op);
    }
  }
  const components = (doc as Node).components as Node | undefined;
  if (components?.schemas) components.schemas = fixSchema(components.schemas);
  return doc;
}
