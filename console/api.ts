import createClient from "openapi-fetch";
import type { ApiAnswer, Json, paths } from "../clients/api";
import { forget, leaveOrganization, organizationId, token } from "./session";

/**
 * The console's one way to the server: the public API, typed from the OpenAPI document
 * (clients/api-types.generated.ts), with the session token and the chosen organization.
 */
export const api = createClient<paths, Json>({ baseUrl: location.origin, headers: { accept: "application/json" } });

api.use({
  onRequest({ request }) {
    const t = token();
    if (t) request.headers.set("authorization", `Bearer ${t}`);
    const org = organizationId();
    if (org) request.headers.set("x-organization-id", String(org));
    return request;
  },
  async onResponse({ response, request }) {
    // A 404 in the chosen organization may mean the user is no longer a member of it (every
    // request there answers "Organization not found."): asked once, and left if so.
    if (response.status === 404 && request.headers.has("x-organization-id")) void leaveIfRemoved(Number(request.headers.get("x-organization-id")));
    // The session ended elsewhere (logout in another client, revoked): back to sign-in. Other
    // 401s (a wrong two-factor code) are the answer to show.
    if (response.status !== 401 || !request.headers.has("authorization")) return;
    const body = (await response
      .clone()
      .json()
      .catch(() => null)) as { code?: string } | null;
    if (body?.code === "unauthenticated") forget(false);
  },
});

export class ApiError extends Error {
  constructor(
    message: string,
    readonly status: number,
    readonly errors?: Record<string, string[]>,
  ) {
    super(message);
  }
}

/** The answer's body, or an ApiError carrying the API's own message. */
export async function ok<D>(pending: Promise<{ data?: D; error?: unknown; response: Response }>): Promise<D> {
  let outcome: { data?: D; error?: unknown; response: Response };
  try {
    outcome = await pending;
  } catch {
    throw new ApiError("Could not reach the server; check that it is running.", 0);
  }
  const { data, error, response } = outcome;
  if (response.ok) return data as D;
  const body = error as { message?: unknown; errors?: Record<string, string[]> } | undefined;
  const message = typeof body?.message === "string" ? body.message : `The server answered HTTP ${response.status}.`;
  throw new ApiError(message, response.status, body?.errors);
}

export type Role = "owner" | "admin" | "member";
export type User = ApiAnswer<"/api/me", "get">["user"];
/** GET /api/v2/me (docs/api-notes.md "API versions"): the v1 document does not describe v2, hence this type. */
export type Identity = {
  user: NonNullable<User>;
  auth_type: string;
  current_organization_id: number;
  organizations: { id: number; name: string; role: Role | null }[];
};

export async function fetchIdentity(): Promise<Identity> {
  const res = await fetch("/api/v2/me", { headers: { authorization: `Bearer ${token() ?? ""}`, accept: "application/json" } });
  if (res.status === 401) forget(false); // only a token that no longer works gets 401 here
  if (!res.ok) throw new ApiError(((await res.json().catch(() => ({}))) as { message?: string }).message ?? `HTTP ${res.status}`, res.status);
  return (await res.json()) as Identity;
}

/** Leaves the organization `id` when GET /api/v2/me no longer lists it among the user's. */
async function leaveIfRemoved(id: number) {
  const me = await fetchIdentity().catch(() => null);
  if (me && organizationId() === id && !me.organizations.some((o) => o.id === id)) leaveOrganization();
}

export type HostedNumber = ApiAnswer<"/api/numbers", "get">["data"][number];
export type Message = ApiAnswer<"/api/messages", "get">["data"][number];
export type Device = ApiAnswer<"/api/byos/devices", "get">["data"][number];
