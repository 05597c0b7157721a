import { describe, expect, test } from "bun:test";
import type { Permission } from "../../server/auth/caller";
import { orgTopic, topicsOf } from "../../server/realtime/connection";
import type { Grant } from "../../server/realtime/grants";
import { deliveriesOf } from "../../server/realtime/hub";

describe("the topics a subscription takes (connection.ts topicsOf)", () => {
  const user: Grant = { organizationId: 5, credential: { sessionId: 1, userId: 2, apiKeyId: null, keyDigest: null } };
  const key = (permissions?: Permission[]): Grant => ({
    organizationId: 5,
    credential: { sessionId: null, userId: null, apiKeyId: 3, keyDigest: "00" },
    ...(permissions ? { permissions } : {}),
  });
  test("a user takes every event of the channel for its organization; an API key, the events of each permission it holds", () => {
    expect(topicsOf("private-organization.5", user)).toEqual([orgTopic("private-organization.5", 5)]);
    expect(topicsOf("private-organization.5", key(["numbers.read", "messages.read"]))).toEqual([
      orgTopic("private-organization.5", 5, "numbers.read"),
      orgTopic("private-organization.5", 5, "messages.read"),
    ]);
  });
  test("an API key holding no permission, or a grant recorded before keys carried theirs, takes no topic: it receives nothing", () => {
    expect(topicsOf("private-organization.5", key([]))).toEqual([]);
    expect(topicsOf("private-organization.5", key())).toEqual([]);
  });
  test("each delivery goes to the topic of every event and to that of the permission reading its type", () => {
    const [d] = deliveriesOf({
      cursor: "c",
      organizationId: 5,
      type: "message.received",
      hostedSimId: null,
      deviceId: null,
      teamId: null,
      payload: {},
    } as never);
    expect(d).toMatchObject({ channel: "private-organization.5", permission: "messages.read" });
  });
});
