import { beforeAll, describe, expect, test } from "bun:test";
import { DEVICE_COMMANDS, EVENT_TYPES } from "../../server/events/catalog";
import { sharedTestContext, type TestContext } from "../helpers";

let ctx: TestContext;
beforeAll(async () => {
  ctx = await sharedTestContext();
}, 60_000);

describe("event payloads in the OpenAPI document", () => {
  test("every catalog type has a payload schema under components, and a webhook body under x-webhooks but the device's commands (no webhook receives them)", async () => {
    const { body } = await ctx.request("GET", "/openapi.json");
    expect(Object.keys(body["x-webhooks"]).sort()).toEqual(EVENT_TYPES.filter((t) => !DEVICE_COMMANDS.includes(t)).sort());
    expect(DEVICE_COMMANDS).toEqual(["message.send", "message.send_cancelled"]);
    for (const type of EVENT_TYPES) {
      expect(body.components.schemas[`Event.${type}`]).toMatchObject({ type: "object" });
      if (DEVICE_COMMANDS.includes(type)) continue;
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
