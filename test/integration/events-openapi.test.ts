import { beforeAll, describe, expect, test } from "bun:test";
import { EVENT_TYPES } from "../../server/events/catalog";
import { sharedTestContext, type TestContext } from "../helpers";

let ctx: TestContext;
beforeAll(async () => {
  ctx = await sharedTestContext();
}, 60_000);

describe("event payloads in the OpenAPI document", () => {
  test("every catalog type has a payload schema under components and a webhook body under x-webhooks", async () => {
    const { body } = await ctx.request("GET", "/openapi.json");
    for (const type of EVENT_TYPES) {
      expect(body.components.schemas[`Event.${type}`]).toMatchObject({ type: "object" });
      const schema = body["x-webhooks"][type].post.requestBody.content["application/json"].schema;
      expect(schema.properties.data).toEqual({ $ref: `#/components/schemas/Event.${type}` });
      expect(schema.properties.type.enum).toEqual([type]);
    }
    // 3.0 form: nullable fields, no `type: "null"`.
    const received = body.components.schemas["Event.message.received"];
    expect(received.properties.team).toMatchObject({ nullable: true });
    expect(JSON.stringify(body.components.schemas)).not.toContain('"type":"null"');
  });
});
