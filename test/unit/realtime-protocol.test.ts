import { describe, expect, test } from "bun:test";
import { channelRefusal, parseChannel } from "../../server/realtime/channels";
import { createLocalGrantStore } from "../../server/realtime/grants";
import { eventFrame, isSocketId, newSocketId, parseClientFrame, signChannel, verifyChannelSignature } from "../../server/realtime/protocol";

describe("realtime protocol", () => {
  test("the signature is hex HMAC-SHA256 of socket_id:channel_name, prefixed by the key (Pusher's reference value)", () => {
    // From Pusher's authentication docs: key 278d425bdf160c739803, secret 7ad3773142a6692b25b8.
    const auth = signChannel("278d425bdf160c739803", "7ad3773142a6692b25b8", "1234.1234", "private-foobar");
    expect(auth).toBe("278d425bdf160c739803:58df8b0c36d6982b82c3ecf6b4662e34fe8c25bba48f5369f135bf843651c3a4");
    expect(verifyChannelSignature("278d425bdf160c739803", "7ad3773142a6692b25b8", "1234.1234", "private-foobar", auth)).toBe(true);
    expect(verifyChannelSignature("278d425bdf160c739803", "7ad3773142a6692b25b8", "1234.1235", "private-foobar", auth)).toBe(false);
    expect(verifyChannelSignature("278d425bdf160c739803", "7ad3773142a6692b25b8", "1234.1234", "private-foobar", undefined)).toBe(false);
  });

  test("socket ids look like Pusher's", () => {
    for (let i = 0; i < 100; i++) expect(isSocketId(newSocketId())).toBe(true);
    expect(isSocketId("1.2.3")).toBe(false);
  });

  test("client frames: data as object or JSON string; anything else is malformed", () => {
    expect(parseClientFrame('{"event":"pusher:subscribe","data":{"channel":"x"}}')).toEqual({
      event: "pusher:subscribe",
      data: { channel: "x" },
      channel: undefined,
    });
    expect(parseClientFrame('{"event":"pusher:subscribe","data":"{\\"channel\\":\\"x\\"}"}')).toMatchObject({ data: { channel: "x" } });
    for (const bad of ["", "null", "42", "[]", '{"event":1}']) expect("error" in parseClientFrame(bad)).toBe(true);
  });

  test("server frames carry data as a JSON string", () => {
    expect(JSON.parse(eventFrame("e", { a: 1 }, "c"))).toEqual({ event: "e", data: '{"a":1}', channel: "c" });
  });

  test("channels: the four private kinds; public, presence and unknown ones refused", () => {
    expect(parseChannel("private-number.12")).toEqual({ kind: "number", id: 12 });
    expect(channelRefusal("private-team.3")).toBeNull();
    for (const name of ["news", "presence-organization.1", "private-organization.0", "private-user.1", "private-team.x", "a b"]) {
      expect(channelRefusal(name)).not.toBeNull();
    }
  });

  test("local grants expire after five minutes", async () => {
    let now = 0;
    const grants = createLocalGrantStore(() => now);
    const grant = { organizationId: 7, credential: { sessionId: 3, userId: 5, apiKeyId: null, keyDigest: null } };
    await grants.put("1.1", "private-number.1", grant);
    expect(await grants.take("1.1", "private-number.1")).toEqual(grant);
    expect(await grants.take("1.2", "private-number.1")).toBeNull();
    await grants.put("1.1", "private-number.1", grant);
    now = 300_001;
    expect(await grants.take("1.1", "private-number.1")).toBeNull();
  });

  test("a grant serves one subscribe: taken, it is gone", async () => {
    const grants = createLocalGrantStore();
    const grant = { organizationId: 7, credential: { sessionId: 3, userId: 5, apiKeyId: null, keyDigest: null } };
    await grants.put("1.1", "private-number.1", grant);
    expect(await grants.take("1.1", "private-number.1")).toEqual(grant);
    expect(await grants.take("1.1", "private-number.1")).toBeNull();
  });

  test("local grants are bounded: past the bound the oldest go first, a grant asked again counts as new", async () => {
    const grants = createLocalGrantStore(Date.now, 3);
    const grant = (n: number) => ({ organizationId: n, credential: { sessionId: n, userId: n, apiKeyId: null, keyDigest: null } });
    for (const n of [1, 2, 3]) await grants.put(`${n}.1`, "private-number.1", grant(n));
    await grants.put("1.1", "private-number.1", grant(1));
    await grants.put("4.1", "private-number.1", grant(4));
    expect(await grants.take("2.1", "private-number.1")).toBeNull();
    for (const n of [1, 3, 4]) expect(await grants.take(`${n}.1`, "private-number.1")).toEqual(grant(n));
  });
});
