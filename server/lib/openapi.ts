/**
 * Elysia writes an OpenAPI 3.0.3 document with a few JSON-Schema-2020 habits that 3.0 does not
 * allow (`type: "null"`, `const`, responses without a description). This rewrites them into valid 3.0
 * (`nullable: true`, one-value `enum`), so generators, validators and our breaking-change guard can read it.
 */
type Node = Record<string, unknown>;

const isNull = (s: unknown) => typeof s === "object" && s !== null && (s as Node).type === "null";

function fixSchema(schema: unknown): unknown {
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
  if (node.patternProperties) {
    // Records: one value schema for any key.
    node.additionalProperties = Object.values(node.patternProperties as Node)[0] ?? true;
    delete node.patternProperties;
  }
  if (Array.isArray(node.examples)) {
    node.example = node.examples[0];
    delete node.examples;
  }
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

export function toOpenApi30<T extends { paths?: Record<string, Record<string, Node>> }>(doc: T): T {
  for (const item of Object.values(doc.paths ?? {})) {
    for (const op of Object.values(item)) {
      const responses = (op.responses ?? {}) as Record<string, Node>;
      for (const [status, response] of Object.entries(responses)) {
        let fixed = fixSchema(response) as Node;
        // A union response schema also comes out bare beside its content: keep the content.
        if (fixed.content && !fixed.$ref) {
          const { content, description } = fixed;
          fixed = { description, content };
        } else if (!fixed.$ref && (fixed.anyOf || fixed.oneOf || fixed.type || fixed.properties)) {
          fixed = { content: { "application/json": { schema: fixed } } };
        }
        if (!fixed.$ref && fixed.description === undefined) fixed.description = status.startsWith("2") ? "Success" : "Error";
        responses[status] = fixed;
      }
      if (op.requestBody) op.requestBody = fixSchema(op.requestBody);
      if (op.parameters) op.parameters = fixSchema(op.parameters);
    }
  }
  const components = (doc as Node).components as Node | undefined;
  if (components?.schemas) components.schemas = fixSchema(components.schemas);
  return doc;
}
