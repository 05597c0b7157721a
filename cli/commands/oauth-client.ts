import { type Command, InvalidArgumentError } from "commander";
import type { OAuthClientRow } from "../../server/admin/operations";
import { redirectUriProblem } from "../../server/oauth/schema";
import { withAdminOps } from "../admin-db";
import { globals } from "../args";
import { details, emit, table } from "../output";
import { adminGroup } from "./admin";

/** An OAuth client as printed: public (no secret), with its exact-match redirect URIs. */
const present = (c: OAuthClientRow) => ({
  client_id: c.client_id,
  name: c.name,
  redirect_uris: c.redirect_uris,
  created_at: c.created_at.toISOString(),
  updated_at: c.updated_at.toISOString(),
});

/** A malformed redirect URI is a usage error (exit 2), like any other bad argument. */
function redirectUri(value: string, previous: string[] | undefined): string[] {
  const problem = redirectUriProblem(value);
  if (problem) throw new InvalidArgumentError(`The redirect URI ${value} ${problem}.`);
  return [...(previous ?? []), value];
}

/** `simhost admin oauth-client create|list|delete`: public clients of the OAuth flow (API.md §2). */
export function registerOAuthClient(program: Command): void {
  const group = adminGroup(program).command("oauth-client").description("OAuth clients (the browser extension ...): public, PKCE S256");

  group
    .command("create")
    .description("register a client; its redirect URIs are matched exactly")
    .requiredOption("--name <name>", "name shown on the consent page")
    .requiredOption("--redirect-uri <uri...>", "one or more redirect URIs", redirectUri)
    .action(async (_opts, cmd: Command) => {
      const o = globals<{ name: string; redirectUri: string[] }>(cmd);
      const client = present(await withAdminOps((a) => a.createOAuthClient(o.name, o.redirectUri)));
      emit(o, client, () =>
        details([
          ["client_id", client.client_id],
          ["name", client.name],
          ["redirect_uris", client.redirect_uris.join(" ")],
        ]),
      );
    });

  group
    .command("list")
    .description("list the registered clients")
    .action(async (_opts, cmd: Command) => {
      const o = globals(cmd);
      const clients = (await withAdminOps((a) => a.listOAuthClients())).map(present);
      emit(o, { data: clients }, () =>
        table(clients, [
          { header: "CLIENT_ID", value: (c) => c.client_id },
          { header: "NAME", value: (c) => c.name },
          { header: "REDIRECT_URIS", value: (c) => c.redirect_uris.join(" ") },
          { header: "CREATED_AT", value: (c) => c.created_at },
        ]),
      );
    });

  group
    .command("delete <client_id>")
    .description("delete a client; its codes, refresh tokens and access tokens stop working at once")
    .action(async (clientId: string, _opts, cmd: Command) => {
      const o = globals(cmd);
      await withAdminOps((a) => a.deleteOAuthClient(clientId));
      emit(o, { client_id: clientId, deleted: true }, () => `Deleted OAuth client ${clientId}.`);
    });
}
