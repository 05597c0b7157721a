import { describe, expect, test } from "bun:test";
import type { Caller } from "../../server/auth/caller";
import { encodeCursor } from "../../server/events/cursor";
import type { StoredEvent } from "../../server/events/log";
import { createScheduler } from "../../server/lib/clock";
import type { Among } from "../../server/messages/waiters";
import { createMessageWaiters } from "../../server/messages/waiters";
import { createFakeClock } from "../fake-clock";

/**
 * The waiter registry alone: a hand-driven event tail, a fake clock for the deadlines, and lookups
 * that record what they were asked (the HTTP and SQL sides are tested in messages-next.test.ts).
 */
function setup(limits = {}) {
  const clock = createFakeClock();
  const deadlines = createScheduler(clock);
  const listeners = new Set<(events: StoredEvent[]) => void>();
  const waiters = createMessageWaiters({
    onEvents: (l) => {
      listeners.add(l);
      return () => listeners.delete(l);
    },
    clock,
    deadlines,
    limits,
  });
  let id = 0;
  const row = (type: StoredEvent["type"], hostedSimId: number, messageId: number, organizationId: number): StoredEvent => {
    const position = { txid: "1", id: ++id };
    return {
      cursor: encodeCursor(position),
      position,
      organizationId,
      type,
      hostedSimId,
      deviceId: null,
      teamId: null,
      payload: { message: { id: messageId } },
      createdAt: new Date(),
    };
  };
  const hand = (events: StoredEvent[]) => {
    for (const l of listeners) l(events);
  };
  /** One message.received row per organization, as the fan-out appends them. */
  const announce = (hostedSimId: number, messageId: number, organizations: number[] = [1]) =>
    hand(organizations.map((o) => row("message.received", hostedSimId, messageId, o)));
  return { clock, waiters, announce, hand, row };
}

const callerOf = (over: Partial<Caller> = {}) =>
  ({ kind: "api_key", organization: { id: 1 }, readScope: [1], user: null, role: null, apiKey: { id: 5 }, sessionId: null, ...over }) as Caller;
const request = (over = {}) => ({ hostedSimId: 7, viewers: [1], quotaOrganization: 1, caller: callerOf(), timeoutMs: 30_000, ...over });
const settle = () => new Promise((resolve) => setTimeout(resolve, 0));

describe("message waiters", () => {
  test("a message announced while the first lookup runs is looked up next: registered before the first check", async () => {
    const { waiters, announce } = setup();
    const asked: Among[] = [];
    const outcome = await waiters.wait(request(), async (among) => {
      asked.push(among);
      if (asked.length === 1) {
        announce(7, 42, [1]); // stored and announced between the check's read and its answer
        return null;
      }
      return among?.includes(42) ? "message 42" : null;
    });
    expect(outcome).toEqual({ found: "message 42" });
    expect(asked).toEqual([undefined, [42]]);
    expect(waiters.size()).toBe(0);
  });

  test("announcements on other numbers, or limited to other organizations, do not wake it; the timeout ends it", async () => {
    const { waiters, announce, clock } = setup();
    let lookups = 0;
    const pending = waiters.wait(request({ timeoutMs: 5000 }), async () => {
      lookups++;
      return null;
    });
    await settle();
    announce(8, 1, [1]);
    announce(7, 2, [2]);
    await settle();
    expect(lookups).toBe(1);
    clock.advance(4999);
    await settle();
    expect(waiters.size(7)).toBe(1);
    clock.advance(1);
    expect(await pending).toEqual({ ended: "timeout" });
    expect(waiters.size()).toBe(0);
  });

  test("only message.received rows of the number wake it (not a status change of the number)", async () => {
    const { waiters, hand, row } = setup();
    const asked: Among[] = [];
    const pending = waiters.wait(request({ timeoutMs: 1000 }), async (among) => {
      asked.push(among);
      return among ? "found" : null;
    });
    await settle();
    hand([row("message.sent", 7, 5, 1)]);
    await settle();
    expect(asked).toEqual([undefined]);
    hand([row("message.received", 7, 5, 1)]);
    expect(await pending).toEqual({ found: "found" });
  });

  test("an aborted request ends its wait and frees its place", async () => {
    const { waiters } = setup();
    const client = new AbortController();
    const pending = waiters.wait(request({ signal: client.signal }), async () => null);
    await settle();
    expect(waiters.size(7)).toBe(1);
    client.abort();
    expect(await pending).toEqual({ ended: "aborted" });
    expect(waiters.size()).toBe(0);
  });

  test("limits per organization and per instance refuse before registering; close ends every wait and refuses new ones", async () => {
    const { waiters } = setup({ perOrganization: 2, perInstance: 3 });
    const waits = [waiters.wait(request(), async () => null), waiters.wait(request(), async () => null)];
    expect(await waiters.wait(request(), async () => null)).toEqual({ refused: "organization_full" });
    waits.push(waiters.wait(request({ quotaOrganization: 2, viewers: [2] }), async () => null));
    expect(await waiters.wait(request({ quotaOrganization: 3 }), async () => null)).toEqual({ refused: "instance_full" });
    expect(waiters.size()).toBe(3);
    waiters.close();
    expect(await Promise.all(waits)).toEqual([{ ended: "shutdown" }, { ended: "shutdown" }, { ended: "shutdown" }]);
    expect(await waiters.wait(request(), async () => null)).toEqual({ refused: "closed" });
    expect(waiters.size()).toBe(0);
  });

  test("the announced message is checked by id; a failing lookup frees the place and reports its error", async () => {
    const { waiters, announce } = setup();
    const pending = waiters.wait(request(), async (among) => {
      if (among) throw new Error("database unreachable");
      return null;
    });
    await settle();
    announce(7, 9, [1]);
    await expect(pending).rejects.toThrow("database unreachable");
    expect(waiters.size()).toBe(0);
  });

  test("a revocation ends the waits of the credentials it takes away, before anything arrives for them; others wait on", async () => {
    const { waiters, announce } = setup();
    const revokedKey = waiters.wait(request(), async (among) => (among ? "for the revoked key" : null));
    const otherKey = waiters.wait(request({ caller: callerOf({ apiKey: { id: 6 } as Caller["apiKey"] }) }), async (among) =>
      among ? "for the other key" : null,
    );
    await settle();
    waiters.revoked({ apiKeyId: 5 });
    announce(7, 3, [1]);
    expect(await revokedKey).toEqual({ ended: "revoked" });
    expect(await otherKey).toEqual({ found: "for the other key" });
    expect(waiters.size()).toBe(0);
  });

  test("a message found while the revocation arrived is not handed over", async () => {
    const { waiters } = setup();
    const pending = waiters.wait(request(), async () => {
      waiters.revoked({ apiKeyId: 5 }); // arrives while the lookup runs
      return "found on a revoked key";
    });
    expect(await pending).toEqual({ ended: "revoked" });
  });
});
