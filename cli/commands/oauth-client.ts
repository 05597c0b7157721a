import { randomBytes } from "node:crypto";
import { type Command, InvalidArgumentError } from "commander";
import type { Sql } from "../../server/db/client";
import { redirectUriProblem } from "../../server/oauth/schema";
import { withAdminDb } from "../admin-db";
import { globals } from "../args";
import { CliError, details, emit, table } from "../output";
import { adminGroup } from "./admin";

type OAuthClientRow = { client_id: string; name: string; redirect_uris: string[]; created_at: Date; updated_at: Date };
const COLUMNS = "client_id, name, redirect_uris, created_at, updated_at";

/** Public client ids are not secret, but unguessable so they cannot be enumerated. */
const newClientId = () => `oc_${randomBytes(18).toString("base64url")}`;

async function createClient(sql: Sql, name: string, redirectUris: string[]): Promise<OAuthClientRow> {
  const [row] = await sql<OAuthClientRow[]>`
    insert into oauth_clients (client_id, name, redirect_uris) values (${newClientId()}, ${name}, ${redirectUris}) returning ${sql.unsafe(COLUMNS)}`;
  return row!;
}

/** The client's access tokens are sessions rows: delete them with it, so they stop working at once. */
async function deleteClient(sql: Sql, clientId: string): Promise<boolean> {
  await sql`delete from sessions where id in (
    select a.session_id from oauth_access_tokens a join oauth_grants g on g.id = a.grant_id
    join oauth_clients c on c.id = g.client_id where c.client_id = ${clientId})`;
  const rows = await sql`delete from oauth_clients where client_id = ${clientId} returning id`;
  return rows.length > 0;
}

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
      const name = o.name.trim();
      if (!name || name.length > 255) throw new CliError("The client name must be 1 to 255 characters.");
      const client = present(await withAdminDb((sql) => createClient(sql, name, [...new Set(o.redirectUri)])));
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
      const clients = (await withAdminDb((sql) => sql<OAuthClientRow[]>`select ${sql.unsafe(COLUMNS)} from oauth_clients order by id`)).map(present);
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
      const deleted = await withAdminDb((sql) => sql.begin((tx) => deleteClient(tx, clientId)));
      if (!deleted) throw new CliError(`No OAuth client ${clientId}.`);
      emit(o, { client_id: clientId, deleted: true }, () => `Deleted OAuth client ${clientId}.`);
    });
}
