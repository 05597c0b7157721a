import type { Command } from "commander";
import { createApiClient } from "../api-client";
import { email, globals, orgOption } from "../args";
import { credentialsPath, loadCredential, saveCredential } from "../credentials";
import { CliError, details, emit } from "../output";
import { ask } from "../prompt";

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
      const first = await api.ok(api.anonymous.POST("/api/auth/login", { body: { email: address, password } }));
      let answer = first;
      if ("2fa_required" in first) {
        const code = o.code ?? (await ask("Two-factor code: ", { what: "two-factor code" }));
        const verified = await api.ok(api.anonymous.POST("/api/auth/2fa/verify", { body: { tmp_token: first.tmp_token, code } }), [401]);
        // The API's 401 names its tmp_token, which a CLI user never sees.
        if (!("token" in verified))
          throw new CliError(
            "The two-factor code was not accepted: wrong, already used (each code works once), or given after 5 minutes. Run login again with the next code.",
          );
        answer = verified;
      }
      if (!("token" in answer)) throw new CliError("The server asked for a second two-factor step.");
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
        const own = createApiClient({ ...o, token: saved.token });
        await own.ok(own.POST("/api/auth/logout"), [401]);
        saveCredential(api.url, undefined);
      }
      emit(o, { url: api.url, logged_out: Boolean(saved) }, () => (saved ? `Logged out of ${api.url}.` : `No saved session for ${api.url}.`));
    });

  orgOption(program.command("whoami"))
    .description("who the server takes you for (GET /api/me)")
    .action(async (_opts, cmd: Command) => {
      const o = globals(cmd);
      const api = createApiClient(o);
      const body = await api.ok(api.GET("/api/me"));
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
