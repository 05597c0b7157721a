import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { renderApiTypes } from "../../.ci/openapi-types";
import { DEVICE_COMMANDS, EVENT_TYPES } from "../../server/events/catalog";
import { createTestContext, type TestContext } from "../helpers";

/**
 * Issue 16: the OpenAPI document lists every event payload in a 3.1 `webhooks` section. The
 * served /openapi.json stays 3.0 (docs/api-notes.md "Event payloads in the OpenAPI document");
 * /docs/openapi-3.1.json is its 3.1 edition, which a generator reads with the webhooks.
 */
let ctx: TestContext;
beforeAll(async () => {
  ctx = await createTestContext();
}, 60_000);
afterAll(() => ctx?.close());

const get = async (path: string) => {
  const res = await ctx.app.handle(new Request(`http://localhost:3000${path}`));
  expect(res.status).toBe(200);
  return (await res.json()) as Record<string, any>;
};

/** Every value of `key` anywhere in the document. */
function valuesOf(node: unknown, key: string, found: unknown[] = []): unknown[] {
  if (Array.isArray(node)) for (const v of node) valuesOf(v, key, found);
  else if (node && typeof node === "object")
    for (const [k, v] of Object.entries(node)) {
      if (k === key) found.push(v);
      valuesOf(v, key, found);
    }
  return found;
}

describe("GET /docs/openapi-3.1.json", () => {
  test("3.1 with a webhooks section naming every event type's payload but the device's commands; the same paths and components as the 3.0 document", async () => {
    const [doc30, doc31] = [await get("/openapi.json"), await get("/docs/openapi-3.1.json")];
    expect(doc30.openapi).toStartWith("3.0");
    expect(doc31.openapi).toBe("3.1.0");
    const received = EVENT_TYPES.filter((t) => !DEVICE_COMMANDS.includes(t));
    expect(Object.keys(doc31.webhooks).sort()).toEqual([...received].sort());
    for (const type of received) {
      const body = doc31.webhooks[type].post.requestBody.content["application/json"].schema;
      expect(body.properties.data).toEqual({ $ref: `#/components/schemas/Event.${type}` });
      expect(doc31.components.schemas[`Event.${type}`]).toBeDefined();
    }
    expect(doc31["x-webhooks"]).toBeUndefined();
    expect(Object.keys(doc31.paths)).toEqual(Object.keys(doc30.paths));
    expect(Object.keys(doc31.components.schemas)).toEqual(Object.keys(doc30.components.schemas));
    expect(doc31.paths["/docs/openapi-3.1.json"]).toBeUndefined();
  });

  test("3.1's JSON Schema: null is a type (no 3.0 nullable), exclusive bounds are numbers", async () => {
    const doc31 = await get("/docs/openapi-3.1.json");
    expect(valuesOf(doc31, "nullable")).toEqual([]);
    for (const bound of [...valuesOf(doc31, "exclusiveMinimum"), ...valuesOf(doc31, "exclusiveMaximum")]) expect(typeof bound).toBe("number");
    // A nullable field of an event payload: a device's last_seen_at.
    expect(doc31.components.schemas["Event.device.online"].properties.last_seen_at.type).toEqual(["string", "null"]);
  });

  test("openapi-typescript reads it and types each webhook's body", async () => {
    const types = await renderApiTypes(await get("/docs/openapi-3.1.json"));
    expect(types).toContain("export interface webhooks");
    for (const type of ["message.received", "device.offline", "number.unlocked"]) expect(types).toContain(`"${type}": {`);
    expect(types).toContain('components["schemas"]["Event.message.received"]');
  }, 60_000);
});
