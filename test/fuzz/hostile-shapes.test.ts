import { beforeAll, describe, expect, test } from "bun:test";
import { createTenant } from "../fixtures";
import { expectErrorShape, readResponse, sharedTestContext, type TestContext } from "../helpers";
import { bodySchemaOf, loadOperations, type Operation } from "../openapi-operations";
import { HOSTILE_DATES, HOSTILE_IDS, type JsonSchema } from "./arbitraries";

/**
 * The shapes that used to reach PostgreSQL or memory, tried on every route of the OpenAPI
 * document, every one of them (the random fuzzer only samples): ids that are not positive
 * integers, date-times that are not real instants, bodies and headers over the limits.
 * Invariant: the documented 4xx in the API.md §1 shape, never a 5xx.
 */
let ctx: TestContext;
let operations: Operation[] = [];
let token: string;

beforeAll(async () => {
  ctx = await sharedTestContext();
  operations = await loadOperations(ctx);
  token = (await createTenant(ctx.sql, { plan: "pro" })).token;
});

const paramsOf = (op: Operation) => (op.path.match(/\{(\w+)\}/g) ?? []).map((p) => p.slice(1, -1));
const fill = (op: Operation, values: Record<string, string>) => paramsOf(op).reduce((p, name) => p.replace(`{${name}}`, values[name] ?? "1"), op.path);
const hasBody = (op: Operation) => op.method !== "GET";

/** Date-time fields of an operation: body properties and query parameters. */
function dateFields(op: Operation): { in: "body" | "query"; name: string }[] {
  const fields: { in: "body" | "query"; name: string }[] = [];
  const props = (bodySchemaOf(op) as (JsonSchema & { properties?: Record<string, JsonSchema> }) | undefined)?.properties ?? {};
  for (const [name, schema] of Object.entries(props)) if (schema.format === "date-time") fields.push({ in: "body", name });
  for (const p of op.parameters ?? []) if (p.in === "query" && p.schema?.format === "date-time") fields.push({ in: "query", name: p.name });
  return fields;
}

async function expectRefused(res: { status: number; body: any; text: string }, status: number, code: string, where: string, failures: string[]) {
  if (res.status !== status || res.body?.code !== code) failures.push(`${where} → ${res.status} ${res.text.slice(0, 160)}`);
  else expectErrorShape(res.body, code);
}

describe("hostile shapes on every route", () => {
  test("the document lists routes with ids and with date-times", () => {
    expect(operations.filter((op) => paramsOf(op).length > 0).length).toBeGreaterThan(30);
    expect(operations.filter((op) => dateFields(op).length > 0).length).toBeGreaterThanOrEqual(2);
  });

  test("every path id that is not a positive integer answers 422 naming the parameter", async () => {
    const failures: string[] = [];
    for (const op of operations) {
      for (const name of paramsOf(op)) {
        for (const id of HOSTILE_IDS) {
          const path = fill(op, { [name]: id });
          const res = await ctx.request(op.method, path, { token, body: hasBody(op) ? {} : undefined });
          // The provider's callbacks check their signature before reading anything (a token is none).
          if (op.path.startsWith("/api/provider/")) {
            await expectRefused(res, 403, "invalid_signature", `${op.method} ${path}`, failures);
            continue;
          }
          await expectRefused(res, 422, "validation_failed", `${op.method} ${path}`, failures);
          if (res.status === 422 && !res.body.errors?.[name]) failures.push(`${op.method} ${path}: errors do not name ${name}: ${res.text}`);
        }
      }
    }
    expect(failures.slice(0, 10)).toEqual([]);
  }, 120_000);

  test("every whole-number query parameter (ids, pages) refuses what is not a whole number in range with 422", async () => {
    const failures: string[] = [];
    const numeric = (schema?: JsonSchema) => [schema, ...(schema?.anyOf ?? [])].some((x) => x?.type === "number" || x?.type === "integer");
    for (const op of operations) {
      for (const p of (op.parameters ?? []).filter((q) => q.in === "query" && numeric(q.schema))) {
        for (const value of HOSTILE_IDS) {
          const others = p.name === "hosted_sim" ? "" : "&hosted_sim=1";
          const path = `${fill(op, {})}?${p.name}=${value}${others}`;
          const res = await ctx.request(op.method, path, { token, body: hasBody(op) ? {} : undefined });
          await expectRefused(res, 422, "validation_failed", `${op.method} ${path}`, failures);
          if (res.status === 422 && !res.body.errors?.[p.name]) failures.push(`${op.method} ${path}: errors do not name ${p.name}: ${res.text}`);
        }
      }
    }
    expect(failures.slice(0, 10)).toEqual([]);
  }, 120_000);

  test("every date-time field refuses impossible and out-of-range dates with 422 naming the field", async () => {
    const failures: string[] = [];
    for (const op of operations) {
      for (const field of dateFields(op)) {
        for (const date of HOSTILE_DATES) {
          const base = fill(op, {});
          const path = field.in === "query" ? `${base}?hosted_sim=1&${field.name}=${encodeURIComponent(date)}` : base;
          const body = field.in === "body" ? { [field.name]: date } : hasBody(op) ? {} : undefined;
          const res = await ctx.request(op.method, path, { token, body });
          await expectRefused(res, 422, "validation_failed", `${op.method} ${path} ${field.name}=${date}`, failures);
          if (res.status === 422 && !res.body.errors?.[field.name])
            failures.push(`${op.method} ${path}: errors do not name ${field.name} for ${date}: ${res.text}`);
        }
      }
    }
    expect(failures.slice(0, 10)).toEqual([]);
  }, 120_000);

  test("every route refuses a body over the limit, declared or streamed, with 413", async () => {
    const failures: string[] = [];
    // Over every route's limit: MAX_BODY_BYTES (64 KiB), and POST /api/messages's 1 MiB (bulk sends).
    const big = JSON.stringify({ name: "x".repeat(1100 * 1024) });
    for (const op of operations.filter(hasBody)) {
      const path = fill(op, {});
      for (const declared of [true, false]) {
        const headers: Record<string, string> = { "content-type": "application/json", authorization: `Bearer ${token}` };
        if (declared) headers["content-length"] = String(big.length);
        const res = await ctx.app.handle(new Request(`http://localhost:3000${path}`, { method: op.method, headers, body: big })).then(readResponse);
        await expectRefused(res, 413, "payload_too_large", `${op.method} ${path} (${declared ? "Content-Length" : "no Content-Length"})`, failures);
      }
    }
    expect(failures.slice(0, 10)).toEqual([]);
  }, 120_000);

  test("every route refuses headers over the limit with 413", async () => {
    const failures: string[] = [];
    for (const op of operations) {
      const path = fill(op, {});
      const res = await ctx.request(op.method, path, { token, headers: { "x-padding": "p".repeat(20 * 1024) }, body: hasBody(op) ? {} : undefined });
      await expectRefused(res, 413, "payload_too_large", `${op.method} ${path}`, failures);
    }
    expect(failures.slice(0, 10)).toEqual([]);
  }, 120_000);
});
