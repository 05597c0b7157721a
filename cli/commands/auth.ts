import type { Command } from "commander";
import { createApiClient } from "../api-client";
import { email, globals, orgOption } from "../args";
import { credentialsPath, loadCredential, saveCredential } from "../credentials";
import { details, emit } from "../output";
import { ask } from "../prompt";

type LoginAnswer = { token: string; token_type: string; expires_at: string | null; user: { id: number; name: string; email: string } };
type LoginOptions = { email?: string; password?: string; code?: string };

export function registerAuth(program: Command): void {
  program
    .command("login")
    .description("sign in to the server and save the session token for it (asks for what is not given, the TOTP code only when 2FA is on)")
    .option("--email <email>", "account email", email)
    .option("--password <password>", "password (prompted without echo when left out)")
    .option("--code <code>", "TOTP code from the authenticator app, when 2FA is on")
    .action(async (_opts, cmd: Command) => {
      const o = globals<LoginOptions>(cmd);
      const api = createApiClient(o);
      const address = o.email ?? (await ask("Email: ", { what: "email" }));
      const password = o.password ?? (await ask("Password: ", { hidden: true, what: "password" }));
      let { body } = await api.post("/api/auth/login", { email: address, password }, { auth: false });
      if (body?.["2fa_required"]) {
        const code = o.code ?? (await ask("Two-factor code: ", { what: "two-factor code" }));
        ({ body } = await api.post("/api/auth/2fa/verify", { tmp_token: body.tmp_token, code }, { auth: false }));
      }
      const answer = body as LoginAnswer;
      const path = credentialsPath();
      saveCredential(
        api.url,
        { token: answer.token, email: answer.user.email, expires_at: answer.expires_at ?? null, saved_at: new Date().toISOString() },
        path,
      );
      emit(
        o,
        { url: api.url, user: answer.user, expires_at: answer.expires_at ?? null, credentials_path: path },
        () => `Logged in to ${api.url} as ${answer.user.email}.`,
      );
    });

  program
    .command("logout")
    .description("end the saved session on the server and forget its token")
    .action(async (_opts, cmd: Command) => {
      const o = globals(cmd);
      const api = createApiClient(o);
      const saved = loadCredential(api.url);
      if (saved) {
        await createApiClient({ ...o, token: saved.token }).post("/api/auth/logout", undefined, { okStatuses: [401] });
        saveCredential(api.url, undefined);
      }
      emit(o, { url: api.url, logged_out: Boolean(saved) }, () => (saved ? `Logged out of ${api.url}.` : `No saved session for ${api.url}.`));
    });

  orgOption(program.command("whoami"))
    .description("who the server takes you for (GET /api/me)")
    .action(async (_opts, cmd: Command) => {
      const o = globals(cmd);
      const { body } = await createApiClient(o).get("/api/me");
      emit(o, body, () =>
        details([
          ["user", body.user ? `${body.user.name} <${body.user.email}> (${body.user.id})` : null],
          ["organization", `${body.organization.name} (${body.organization.id})`],
          ["auth", body.auth_type],
          ...(body.api_key ? ([["api key", `${body.api_key.name} (${body.api_key.id}): ${body.api_key.permissions.join(", ")}`]] as [string, unknown][]) : []),
        ]),
      );
    });
}
