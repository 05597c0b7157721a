import { Elysia, t } from "elysia";
import { unauthenticated } from "../errors";
import { clientAddress } from "../lib/versions";
import type { Services } from "../services";
import { accountRoutes } from "./account-routes";
import { apiKeyNotAllowed, bearerToken } from "./caller";
import { createLoginFlow } from "./login";
import { callerPlugin, ruleDetail } from "./plugin";
import { presentIdentity, presentUser } from "./present";
import { ChallengeResponse, CodeBody, LoginBody, MeResponse, SetupResponse, TokenResponse, UserData, VerifyBody } from "./schema";
import { findApiKeyUser } from "./store";
import { isApiKey } from "./tokens";
import { createTwoFactor } from "./two-factor";

type Deps = Pick<Services, "auth" | "sql" | "limiter" | "clock" | "config">;

const tags = ["Auth"];

export function authRoutes(services: Deps) {
  const flow = createLoginFlow({ sql: services.sql, limiter: services.limiter, clock: services.clock, sessionTtlDays: services.config.SESSION_TTL_DAYS });
  const twoFactor = createTwoFactor({ sql: services.sql, limiter: services.limiter, clock: services.clock, credentials: services.auth });

  // Signing in needs no token: these routes stay outside the caller plugin.
  const signIn = new Elysia()
    .post("/api/auth/login", ({ body, server, request }) => flow.login(body.email, body.password, clientAddress(server, request)), {
      body: LoginBody,
      response: { 200: t.Union([TokenResponse, ChallengeResponse]) },
      detail: {
        tags,
        summary: "Sign in with email and password",
        description:
          "Answers a session token, or `2fa_required` with a tmp_token when two-factor authentication is on. After 10 failures of one account from one client address in 15 minutes (20 from all addresses), each further attempt waits a delay that doubles with every failure (60 s up to 15 min; 429 with Retry-After meanwhile); an address has a ceiling of 100 failures over all accounts.",
        security: [],
      },
    })
    .post("/api/auth/2fa/verify", ({ body, server, request }) => flow.verifyTwoFactor(body.tmp_token, body.code, clientAddress(server, request)), {
      body: VerifyBody,
      response: { 200: TokenResponse },
      detail: {
        tags,
        summary: "Finish a 2FA sign-in with the tmp_token and a TOTP code",
        description: "A tmp_token lives 5 minutes, works once, and is burnt by 5 wrong codes.",
        security: [],
      },
    });

  // Signing out needs the token alone, not the caller plugin's organization: a user removed from
  // every organization (whose requests answer 403) can still end their token. Decided in the
  // transform hook, as the plugin decides: a refusal comes before any input's 422.
  const sessions = new WeakMap<Request, { id: number; userId: number }>();
  const signOut = new Elysia().post(
    "/api/auth/logout",
    async ({ request, set }) => {
      // As DELETE /api/auth/sessions/{current} does: an OAuth token ends with its grant, or the
      // extension's refresh token would mint a new one.
      const session = sessions.get(request)!;
      await services.auth.endUserSessions(session.userId, { only: session.id });
      set.status = 204;
      return new Response(null, { status: 204 });
    },
    {
      // It takes no body: one sent is not parsed (a malformed one answered 400 and did not sign out).
      parse: "none",
      async transform({ request }) {
        // Read and dropped, so a streamed body past the size limit is refused (413) as on every route.
        if (request.body) await request.arrayBuffer();
        const token = bearerToken(request.headers.get("authorization"));
        if (!token) throw unauthenticated();
        if (isApiKey(token)) {
          await services.auth.resolve(request); // an unknown key is 401, as everywhere
          throw apiKeyNotAllowed();
        }
        const session = await services.auth.sessionOf(token);
        if (!session) throw unauthenticated();
        sessions.set(request, session);
      },
      // Its rule as the plugin would state it: session tokens only.
      detail: { tags, summary: "Revoke the token of this request", ...ruleDetail({ apiKey: "session_only" }) },
    },
  );

  return new Elysia()
    .use(signIn)
    .use(signOut)
    .use(accountRoutes(services))
    .use(callerPlugin(services.auth))
    .get("/api/me", async ({ caller: c }) => presentIdentity(c, c.apiKey ? await findApiKeyUser(services.sql, c.apiKey.id) : c.user), {
      auth: { apiKey: "any" },
      response: { 200: MeResponse },
      detail: {
        tags,
        summary: "Current identity",
        description:
          "With an API key, `user` is the key's creator while they are a member of its organization, else the organization's first owner (null only if it has none).",
      },
    })
    .post(
      "/api/auth/2fa/setup",
      async ({ caller: c }) => {
        return twoFactor.setup(c.user!.id);
      },
      {
        auth: { apiKey: "session_only" },
        response: { 200: SetupResponse },
        detail: { tags, summary: "Create a TOTP secret (SHA-1, 6 digits, 30 s); 2FA is on only after enable" },
      },
    )
    .post(
      "/api/auth/2fa/enable",
      async ({ caller: c, body }) => {
        return { data: presentUser(await twoFactor.enable(c.user!.id, body.code)) };
      },
      {
        auth: { apiKey: "session_only" },
        body: CodeBody,
        response: { 200: UserData },
        detail: { tags, summary: "Turn 2FA on with a code from the authenticator app" },
      },
    )
    .post(
      "/api/auth/2fa/disable",
      async ({ caller: c, body }) => {
        return { data: presentUser(await twoFactor.disable(c.user!.id, body.code)) };
      },
      { auth: { apiKey: "session_only" }, body: CodeBody, response: { 200: UserData }, detail: { tags, summary: "Turn 2FA off with a current code" } },
    );
}
