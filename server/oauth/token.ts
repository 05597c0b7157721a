import { type Recorder, type Revoker, revokeEnded } from "../auth/revoker";
import { credentialsEpoch, deleteSession } from "../auth/store";
import { issueSession } from "../auth/tokens";
import type { Pool, Sql } from "../db/client";
import { invalidClient, invalidGrant, invalidRequest, OAuthError } from "./oauth-error";
import { isValidVerifier, verifyS256 } from "./pkce";
import type { AuthorizationCodeGrant, RefreshTokenGrant, RevokeRequest } from "./schema";
import * as store from "./store";

export const CODE_TTL_SECONDS = 60;
export const REFRESH_TOKEN_TTL_SECONDS = 30 * 24 * 3600;

export type TokenBody = { access_token: string; token_type: "Bearer"; expires_in: number; refresh_token: string };

/**
 * The token endpoint's grants and RFC 7009 revocation. A replayed code or refresh token is a
 * sign of theft: the grant it belongs to is revoked, and that revocation is committed even
 * though the request itself fails. Every transaction runs through the credential module's
 * `change`, so what it revokes is logged with it and dropped on every instance before the
 * request answers.
 */
export function createTokenService(opts: { sql: Pool; accessTokenSeconds: number; change: Revoker["change"] }) {
  const { sql, accessTokenSeconds } = opts;

  /** Tokens of a grant whose user's credentials epoch is `epoch`, share-locked by this transaction already (store.ts). */
  async function issue(tx: Sql, grantId: string, userId: number, epoch: number): Promise<TokenBody> {
    const access = await issueSession(tx, userId, { kind: "oauth", ttlSeconds: accessTokenSeconds, epoch });
    if (!access) throw new Error("the grant's user row was share-locked in this epoch; the session insert cannot miss it");
    await store.linkAccessToken(tx, access.id, grantId);
    const refresh = await store.insertRefreshToken(tx, grantId, REFRESH_TOKEN_TTL_SECONDS);
    return { access_token: access.token, token_type: "Bearer", expires_in: accessTokenSeconds, refresh_token: refresh };
  }

  async function clientOrFail(clientId: string) {
    const client = await store.findClient(sql, clientId);
    if (!client) throw invalidClient();
    return client;
  }

  /** Runs `fn` in a transaction; an OAuthError it returns is thrown only after the commit (and the revocations it recorded). */
  async function commitThen(fn: (tx: Sql, record: Recorder) => Promise<TokenBody | OAuthError>): Promise<TokenBody> {
    const result = await opts.change(fn);
    if (result instanceof OAuthError) throw result;
    return result;
  }

  async function exchangeCode(p: AuthorizationCodeGrant): Promise<TokenBody> {
    const client = await clientOrFail(p.client_id);
    if (!isValidVerifier(p.code_verifier)) throw invalidRequest("code_verifier must be 43 to 128 characters of [A-Za-z0-9-._~].");
    await store.pruneExpired(sql);
    return commitThen(async (tx, record) => {
      const code = await store.lockCode(tx, p.code);
      if (!code || code.client_id !== client.id) return invalidGrant("The authorization code is invalid.");
      if (code.used_at) {
        revokeEnded(record, await store.revokeGrantOfCode(tx, code.id));
        return invalidGrant("The authorization code was already used; tokens issued from it are revoked.");
      }
      // Single use means a single attempt: a failed redemption burns the code too.
      await store.markCodeUsed(tx, code.id);
      if (code.expired) return invalidGrant("The authorization code has expired.");
      if (code.redirect_uri !== p.redirect_uri) return invalidGrant("redirect_uri does not match the authorization request.");
      if (!verifyS256(p.code_verifier, code.code_challenge)) return invalidGrant("code_verifier does not match the code_challenge.");
      const grantId = await store.createGrant(tx, { clientId: client.id, userId: code.user_id, codeId: code.id, epoch: code.credentials_epoch });
      if (!grantId) return invalidGrant("The authorization code is no longer valid: the user changed their password or signed out everywhere since.");
      return issue(tx, grantId, code.user_id, code.credentials_epoch);
    });
  }

  async function refresh(p: RefreshTokenGrant): Promise<TokenBody> {
    const client = await clientOrFail(p.client_id);
    return commitThen(async (tx, record) => {
      const token = await store.lockRefreshToken(tx, p.refresh_token);
      if (!token || token.client_id !== client.id || token.revoked) return invalidGrant("The refresh token is invalid or revoked.");
      if (token.used_at) {
        revokeEnded(record, await store.revokeGrant(tx, token.grant_id));
        return invalidGrant("The refresh token was already used; its token family is revoked.");
      }
      if (token.expired) return invalidGrant("The refresh token has expired.");
      // The user's row share-locked, then the grant read again: a sign-out everywhere else either
      // committed before (the grant reads revoked) or waits for this transaction and ends its token.
      const epoch = await credentialsEpoch(tx, token.user_id, { share: true });
      if (epoch === undefined || (await store.grantRevoked(tx, token.grant_id))) return invalidGrant("The refresh token is invalid or revoked.");
      await store.markRefreshTokenUsed(tx, token.id);
      return issue(tx, token.grant_id, token.user_id, epoch);
    });
  }

  /**
   * RFC 7009: a refresh token revokes its whole grant, an access token itself. Unknown tokens,
   * and tokens of another client, answer success too, so revocation reveals nothing.
   */
  async function revoke(p: RevokeRequest): Promise<void> {
    const client = await clientOrFail(p.client_id);
    await opts.change(async (tx, record) => {
      const order = p.token_type_hint === "access_token" ? [revokeAccess, revokeRefresh] : [revokeRefresh, revokeAccess];
      for (const attempt of order) if (await attempt(tx, p.token, client.id, record)) return;
    });
  }

  async function revokeRefresh(tx: Sql, token: string, clientId: number, record: Recorder) {
    const row = await store.lockRefreshToken(tx, token);
    if (!row || row.client_id !== clientId) return false;
    revokeEnded(record, await store.revokeGrant(tx, row.grant_id));
    return true;
  }

  async function revokeAccess(tx: Sql, token: string, clientId: number, record: Recorder) {
    const row = await store.findAccessTokenGrant(tx, token);
    if (!row || row.client_id !== clientId) return false;
    await deleteSession(tx, row.session_id);
    record.revoke({ sessionId: row.session_id });
    return true;
  }

  return { exchangeCode, refresh, revoke };
}
