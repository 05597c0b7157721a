/**
 * The OpenAPI 3.1 edition of the v1 document (/docs/openapi-3.1.json), derived from the 3.0 one
 * at /openapi.json (docs/api-notes.md "Event payloads in the OpenAPI document"): the same paths and
 * components, 3.1's JSON Schema (`type: [T, "null"]` for 3.0's `nullable`, numeric exclusive
 * bounds), and a real `webhooks` section (3.0's `x-webhooks`), one `post` per event type whose
 * body's `data` is `components.schemas["Event.<type>"]`. 3.0 stays the served default: the
 * breaking-change guard's snapshot, the generated clients and every client generated from it read 3.0.
 */
type Node = Record<string, unknown>;

const NULL = { type: "null" };

function upgradeSchema(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(upgradeSchema);
  if (typeof value !== "object" || value === null) return value;
  const node: Node = {};
  for (const [k, v] of Object.entries(value)) node[k] = upgradeSchema(v);
  for (const [flag, bound] of [
    ["exclusiveMinimum", "minimum"],
    ["exclusiveMaximum", "maximum"],
  ] as const) {
    if (node[flag] === true) {
      node[flag] = node[bound];
      delete node[bound];
    } else if (node[flag] === false) delete node[flag];
  }
  if (node.nullable !== true) return node;
  delete node.nullable;
  if (Array.isArray(node.enum) && !node.enum.includes(null)) node.enum = [...node.enum, null];
  if (typeof node.type === "string") {
    node.type = [node.type, "null"];
    return node;
  }
  for (const key of ["anyOf", "oneOf"] as const) {
    if (Array.isArray(node[key])) {
      node[key] = [...(node[key] as unknown[]), NULL];
      return node;
    }
  }
  // A nullable reference (or a schema without a type): either it or null.
  const { description, ...rest } = node;
  return { ...(description === undefined ? {} : { description }), anyOf: [rest, NULL] };
}

export function toOpenApi31(doc30: Node): Node {
  const { openapi: _version, "x-webhooks": webhooks, ...rest } = upgradeSchema(doc30) as Node;
  return { openapi: "3.1.0", ...rest, webhooks: webhooks ?? {} };
}
