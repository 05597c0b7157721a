import { describe, expect, test } from "bun:test";
import type { Grant } from "../../server/realtime/grants";
import { createRevocationLog, revokes } from "../../server/realtime/revocation";

const session: Grant = { organizationId: 1, credential: { sessionId: 10, userId: 100, apiKeyId: null, keyDigest: null } };
const key: Grant = { organizationId: 1, credential: { sessionId: null, userId: null, apiKeyId: 20, keyDigest: "00ff00ff00ff00ff" } };

describe("which subscriptions a revocation ends", () => {
  test("a session, an API key, a user, a membership, an organization, everything", () => {
    expect(revokes({ sessionId: 10 }, session)).toBe(true);
    expect(revokes({ sessionId: 11 }, session)).toBe(false);
    expect(revokes({ apiKeyId: 20 }, key)).toBe(true);
    expect(revokes({ apiKeyId: 20 }, session)).toBe(false);
    expect(revokes({ userId: 100 }, session)).toBe(true);
    expect(revokes({ userId: 100 }, key)).toBe(false);
    expect(revokes({ userId: 100, organizationId: 1 }, session)).toBe(true);
    expect(revokes({ userId: 100, organizationId: 2 }, session)).toBe(false);
    expect(revokes({ organizationId: 1 }, key)).toBe(true);
    expect(revokes({ organizationId: 2 }, key)).toBe(false);
    expect(revokes({ everything: true }, key)).toBe(true);
  });

  test("the log tells a check in flight what happened meanwhile", () => {
    const log = createRevocationLog(2);
    const mark = log.mark();
    expect(log.since(mark, session)).toBe("none");
    log.record({ apiKeyId: 20 });
    expect(log.since(mark, session)).toBe("none");
    expect(log.since(mark, key)).toBe("revoked");
    log.record({ everything: true });
    expect(log.since(mark, session)).toBe("recheck");
    // More revocations than it keeps: it cannot tell, so the check is made again.
    log.record({ sessionId: 99 });
    expect(log.since(mark, session)).toBe("recheck");
    expect(log.since(log.mark(), session)).toBe("none");
  });
});
