import type { JsonSchema } from "./fuzz/arbitraries";
import type { TestContext } from "./helpers";

// Routes that are not JSON API routes: the OAuth endpoints answer RFC 6749 errors; documentation,
// metrics and the WebSocket endpoint are not API resources.
const NON_API = [/^\/oauth\//, /^\/docs/, /^\/openapi\.json$/, /^\/metrics$/, /^\/app\//];

export type Operation = {
  method: string;
  path: string;
  parameters?: { in: string; name: string; schema?: JsonSchema }[];
  requestBody?: { content?: Record<string, { schema?: JsonSchema }> };
};

/** Every API operation the OpenAPI document lists. */
export async function loadOperations(ctx: TestContext): Promise<Operation[]> {
  const doc = (await ctx.request("GET", "/openapi.json")).body;
  const operations: Operation[] = [];
  for (const [path, item] of Object.entries<Record<string, Operation>>(doc.paths)) {
    if (NON_API.some((r) => r.test(path))) continue;
    for (const [method, op] of Object.entries(item)) {
      if (["get", "post", "put", "patch", "delete"].includes(method)) operations.push({ ...op, method: method.toUpperCase(), path });
    }
  }
  return operations;
}

/** The JSON (or form) body schema of an operation, if it has one. */
export const bodySchemaOf = (op: Operation) =>
  op.requestBody?.content?.["application/json"]?.schema ??
  op.requestBody?.content?.["multipart/form-data"]?.schema ??
  op.requestBody?.content?.["application/x-www-form-urlencoded"]?.schema;
