import Ajv, { type ValidateFunction } from "ajv";
import addFormats from "ajv-formats";

/**
 * Checks every answer a test sees against the OpenAPI document the app serves (item 10 of issue
 * 15): the schema of its route and status, so schema and behaviour cannot drift apart. The
 * document is JSON Schema in OpenAPI 3.0 dialect (`nullable`, `$ref` to components), which
 * TypeBox cannot take as input; Ajv compiles it (it knows `nullable`).
 *
 * - A documented status: the body must match that status's JSON schema.
 * - An error status the route does not list (401, 403, 404, 429 ...): the API.md §1 shape.
 * - A success status the route does not list: a mismatch, except 204 with no body where the
 *   route documents an empty success.
 * Answers that are not JSON (pages, XML, Markdown, metrics) are checked for their status only.
 */
type Node = Record<string, unknown>;
type Operation = { responses?: Record<string, { description?: string; content?: Record<string, { schema?: Node }> }> };
export type OpenApiDocument = { paths: Record<string, Record<string, Operation>>; components?: { schemas?: Record<string, Node> } };

const VERSION_PREFIX = /^\/api\/v1(?=\/)/;

/** `#/components/schemas/X` → the schema itself (the document's only kind of $ref). */
function inline(schema: unknown, components: Record<string, Node>): unknown {
  if (Array.isArray(schema)) return schema.map((s) => inline(s, components));
  if (typeof schema !== "object" || schema === null) return schema;
  const ref = (schema as Node).$ref;
  if (typeof ref === "string") return inline(components[ref.split("/").pop()!], components);
  const out: Node = {};
  // `{ nullable: true, enum: [null] }`, the document's bare null: Ajv wants a type beside nullable.
  if ((schema as Node).nullable === true && (schema as Node).type === undefined) return { enum: [null] };
  for (const [k, v] of Object.entries(schema)) {
    // OpenAPI 3.0's boolean exclusive bounds are draft-04 syntax; Ajv speaks draft-07.
    if ((k === "exclusiveMinimum" || k === "exclusiveMaximum") && typeof v === "boolean") continue;
    out[k] = inline(v, components);
  }
  return out;
}

export function createResponseCheck(doc: OpenApiDocument) {
  const ajv = new Ajv({ strict: false, allErrors: true });
  addFormats(ajv);
  ajv.addFormat("integer", /^-?[0-9]+$/);
  const components = doc.components?.schemas ?? {};
  const errorSchema = ajv.compile(inline(components.Error, components) as Node);
  const routes = Object.entries(doc.paths).map(([template, ops]) => ({
    pattern: new RegExp(`^${template.replace(/\{[^}]+\}/g, "[^/]+")}$`),
    ops,
  }));
  const compiled = new Map<string, ValidateFunction | null>();

  function validator(key: string, schema: Node | undefined) {
    if (!compiled.has(key)) compiled.set(key, schema ? ajv.compile(inline(schema, components) as Node) : null);
    return compiled.get(key)!;
  }

  /** Why this answer contradicts the document, or null when it conforms (or the route is not in the v1 document). */
  return function check(method: string, url: string, status: number, contentType: string | null, text: string): string | null {
    const path = new URL(url, "http://localhost").pathname.replace(VERSION_PREFIX, "");
    const route = routes.find((r) => r.pattern.test(path));
    const op = route?.ops[method.toLowerCase()];
    if (!op) return null;
    const where = `${method} ${path} → ${status}`;
    const documented = op.responses?.[String(status)];
    const json = /^application\/json\b/i.test(contentType ?? "");
    const body = json && text ? JSON.parse(text) : undefined;
    if (!documented) {
      if (status >= 400) return json && !errorSchema(body) ? `${where}: not the error shape: ${ajv.errorsText(errorSchema.errors)}` : null;
      const emptySuccess = Object.entries(op.responses ?? {}).some(([s, r]) => s.startsWith("2") && !r.content);
      if (status === 204 && !text && emptySuccess) return null;
      return `${where}: status not in the document (documented: ${Object.keys(op.responses ?? {}).join(", ")})`;
    }
    const schema = documented.content?.["application/json"]?.schema;
    if (!schema || body === undefined) return null;
    const validate = validator(`${method} ${route!.pattern.source} ${status}`, schema);
    if (validate && !validate(body)) return `${where}: ${ajv.errorsText(validate.errors, { dataVar: "body" })}; body: ${text.slice(0, 300)}`;
    return null;
  };
}
