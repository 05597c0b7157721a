import { Elysia, t } from "elysia";
import { IdParam } from "../lib/fields";
import type { Services } from "../services";
import { createAccount, SESSION_LIST_MAX } from "./account";
import type { Caller } from "./caller";
import { callerPlugin } from "./plugin";
import { PasswordBody, SessionList, SignedOutResponse } from "./schema";

const tags = ["Auth"];
const rule = { apiKey: "session_only" } as const;

/** A user caller's user id and token id (the session_only rule lets only session and OAuth tokens through). */
const own = (c: Caller) => ({ userId: c.user!.id, sessionId: c.sessionId! });

/** The signed-in user's password and tokens (API.md §2 extended; docs/api-notes.md "Account"). */
export function accountRoutes(services: Pick<Services, "auth" | "sql" | "limiter">) {
  const account = createAccount({ sql: services.sql, limiter: services.limiter, credentials: services.auth });
  return new Elysia()
    .use(callerPlugin(services.auth))
    .post(
      "/api/auth/password",
      ({ caller, body }) => {
        const { userId, sessionId } = own(caller);
        return account.changePassword(userId, sessionId, body.current_password, body.new_password);
      },
      {
        auth: rule,
        body: PasswordBody,
        response: { 200: SignedOutResponse },
        detail: {
          tags,
          summary: "Change your password",
          description:
            "Needs the current password (a wrong one is 422 on `current_password` and counts as a failure: 10 per user in 15 minutes, then 429 with Retry-After). On success every other session and OAuth token of the user stops working on every instance before the answer; the token of this request keeps working.",
        },
      },
    )
    .get("/api/auth/sessions", async ({ caller }) => ({ data: await account.listSessions(own(caller).userId, own(caller).sessionId) }), {
      auth: rule,
      response: { 200: SessionList },
      detail: {
        tags,
        summary: "Your active session and OAuth tokens",
        description: `Unexpired tokens of the signed-in user, most recently used first, at most ${SESSION_LIST_MAX}; \`current\` marks the token of this request.`,
      },
    })
    .post("/api/auth/sessions/revoke-others", ({ caller }) => account.signOutOthers(own(caller).userId, own(caller).sessionId), {
      auth: rule,
      response: { 200: SignedOutResponse },
      detail: {
        tags,
        summary: "Sign out every other session",
        description: "Every session and OAuth token of the user but this one stops working on every instance before the answer.",
      },
    })
    .delete(
      "/api/auth/sessions/:session",
      async ({ caller, params, set }) => {
        await account.signOut(own(caller).userId, Number(params.session));
        set.status = 204;
        return new Response(null, { status: 204 });
      },
      {
        auth: rule,
        params: t.Object({ session: IdParam() }),
        detail: {
          tags,
          summary: "Sign out one session",
          description: "One of your own tokens (404 for any other id); it stops working on every instance before the answer.",
        },
      },
    );
}
