import { afterAll, beforeAll, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { API_TYPES_FILE, renderApiTypes } from "../../.ci/openapi-types";
import { createTestContext, type TestContext } from "../helpers";

let ctx: TestContext;
beforeAll(async () => {
  ctx = await createTestContext();
});
afterAll(() => ctx?.close());

test("the clients' generated API types match the OpenAPI document the app serves (else: bun run openapi:types)", async () => {
  const document = await (await ctx.app.handle(new Request("http://localhost:3000/openapi.json"))).json();
  const committed = readFileSync(API_TYPES_FILE, "utf8");
  const generated = await renderApiTypes(document);
  // A line-level difference first, so a failure says where the document moved.
  const [a, b] = [committed.split("\n"), generated.split("\n")];
  const line = a.findIndex((l, i) => l !== b[i]);
  expect(line === -1 ? null : { line: line + 1, committed: a[line], generated: b[line] }).toBeNull();
  expect(committed).toBe(generated);
}, 60_000);
