import { randomBytes } from "node:crypto";
import { type Revoker, revokeEnded } from "../auth/revoker";
import { deleteUserSessions, setTotpEnabled } from "../auth/store";
import type { Pool, Sql } from "../db/client";
import { countJobs, type DeadJobSelection, discardDeadJobs, listDeadJobs, retryDeadJobs } from "../jobs/dead-jobs";
import { randomString } from "../lib/crypto";
import { characterCount } from "../lib/fields";
import { findPoolNumbers, findTakenNumbers, insertPoolNumbers, type NewPoolNumbers } from "../numbers/pool";

export type { DeadJob, DeadJobSelection, QueueCounts } from "../jobs/dead-jobs";
export type { PoolNumber } from "../numbers/pool";
export type { OAuthClientRow } from "./store";

import * as store from "./store";

export const PLANS = ["free", "pro", "enterprise"] as const;
export const ROLES = ["owner", "admin", "member"] as const;
export type Plan = (typeof PLANS)[number];
export type Role = (typeof ROLES)[number];

/** An operator's request the database refuses (unknown organization, number taken ...): the message is for the operator. */
export class AdminError extends Error {}

export type NewUser = { organizationId: number; email: string; password: string; name?: string; role?: Role };

/** Public client ids are not secret, but unguessable so they cannot be enumerated. */
const newClientId = () => `oc_${randomBytes(18).toString("base64url")}`;

/**
 * An organization with members keeps an owner: removing or demoting the last one while others
 * remain is refused, and the change rolls back. Counted with the organization's members locked
 * (`lockOrganizationMembers`), so two commands cannot each leave the other owner the last.
 */
async function keepAnOwner(tx: Sql, organizationId: number, membersLeft: number) {
  if (membersLeft > 0 && (await store.countOwners(tx, organizationId)) === 0)
    throw new AdminError(`Organization ${organizationId} would have no owner left: make another member owner first (admin user create --role owner).`);
}

/**
 * The operators' operations (the CLI's admin, pool and oauth-client commands, and the first-start
 * bootstrap). Each runs in one transaction through the credential module's `change`: what it
 * changes about a signed-in caller (role, membership, plan, an OAuth client's tokens) is revoked
 * on every running instance before the operation returns.
 */
export function createAdmin(deps: { sql: Pool; change: Revoker["change"] }) {
  const { change } = deps;

  async function addUser(u: NewUser) {
    // Hashed before the transaction (argon2id takes a while); an existing user's password stays as it is, so only a new one's is checked.
    const passwordHash = u.password.length >= 8 ? await Bun.password.hash(u.password, { algorithm: "argon2id" }) : null;
    return change(async (tx, record) => {
      const members = await store.lockOrganizationMembers(tx, u.organizationId);
      if (members === undefined) throw new AdminError(`Organization ${u.organizationId} not found.`);
      const existing = await store.findUserIdByEmail(tx, u.email);
      if (!existing && passwordHash === null) throw new AdminError("The password must have at least 8 characters.");
      const user = existing ?? (await store.insertUser(tx, { name: u.name ?? u.email.split("@")[0]!, email: u.email, passwordHash: passwordHash! }));
      const role = u.role ?? (members === 0 ? "owner" : "member");
      const m = await store.upsertMembership(tx, { userId: user.id, organizationId: u.organizationId, role, keepRole: u.role === undefined });
      // An organization's first member is its owner: one made admin or member would leave it
      // without an owner, and the members after it could never be removed (keepAnOwner).
      if (members === 0 && m.after !== "owner")
        throw new AdminError(`The first member of organization ${u.organizationId} must be its owner: leave out --role, or give --role owner.`);
      if (m.before === "owner" && m.after !== "owner") await keepAnOwner(tx, u.organizationId, members);
      // A new membership widens what the user's cached callers read (Caller.readScope); a new role changes what they may do.
      if (m.before === null) record.refresh({ userId: user.id });
      else if (m.before !== m.after) record.refresh({ userId: user.id, organizationId: u.organizationId });
      // What changed, for the CLI to say: a new user, a membership added, a role changed, or nothing.
      const outcome = !existing ? "created" : m.before === null ? "membership added" : m.before !== m.after ? `role changed from ${m.before}` : "unchanged";
      return { id: user.id, email: user.email, role: m.after as Role, created: !existing, outcome };
    });
  }

  return {
    createOrganization: (name: string, plan: Plan = "free") => {
      if (!name.trim()) throw new AdminError("The organization name must not be empty.");
      if (characterCount(name.trim()) > 255) throw new AdminError("The organization name must be at most 255 characters.");
      return change((tx) => store.insertOrganization(tx, name.trim(), plan));
    },
    setPlan: (organizationId: number, plan: Plan) =>
      change(async (tx, record) => {
        const org = await store.updatePlan(tx, organizationId, plan);
        if (!org) throw new AdminError(`Organization ${organizationId} not found.`);
        record.refresh({ organizationId });
        return org;
      }),
    /** Creates the user (or finds it by email, password unchanged) and adds the membership; a new role replaces the old one. */
    addUser,
    /** Ends a user's membership: their sessions and OAuth tokens stop acting in the organization on every instance at once. */
    removeUser: (organizationId: number, email: string) =>
      change(async (tx, record) => {
        const user = await store.findUserIdByEmail(tx, email);
        if (!user) throw new AdminError(`No user ${email}.`);
        const members = await store.lockOrganizationMembers(tx, organizationId);
        if (members === undefined) throw new AdminError(`Organization ${organizationId} not found.`);
        const role = await store.deleteMembership(tx, user.id, organizationId);
        if (role === null) throw new AdminError(`${email} is not a member of organization ${organizationId}.`);
        if (role === "owner") await keepAnOwner(tx, organizationId, members - 1);
        record.revoke({ userId: user.id, organizationId });
        return { id: user.id, email: user.email, organization_id: organizationId };
      }),
    /**
     * Turns a user's two-factor authentication off (an owner who lost their authenticator, or whose
     * stolen token turned it on with the thief's), and ends every session and OAuth grant of theirs
     * on every instance: whoever held one signs in again, with the password.
     */
    resetTwoFactor: (email: string) =>
      change(async (tx, record) => {
        const user = await store.findUserIdByEmail(tx, email);
        if (!user) throw new AdminError(`No user ${email}.`);
        await setTotpEnabled(tx, user.id, { enabled: false });
        const ended = await deleteUserSessions(tx, user.id, { all: true });
        revokeEnded(record, ended);
        return { id: user.id, email: user.email, sessions_ended: ended.sessionIds.length, grants_ended: ended.grantIds.length };
      }),
    addPoolNumbers: (n: NewPoolNumbers) =>
      change(async (tx) => {
        const numbers = [...new Set(n.numbers)];
        const taken = await findTakenNumbers(tx, numbers);
        if (taken.length > 0) throw new AdminError(`Already in the pool: ${taken.join(", ")}. None of the ${numbers.length} numbers given was added.`);
        return findPoolNumbers(tx, { ids: await insertPoolNumbers(tx, { ...n, numbers }) });
      }),
    listPoolNumbers: (type?: string) => findPoolNumbers(deps.sql, { type }),
    createOAuthClient: (name: string, redirectUris: string[]) => {
      if (!name.trim() || name.trim().length > 255) throw new AdminError("The client name must be 1 to 255 characters.");
      return change((tx) => store.insertOAuthClient(tx, { clientId: newClientId(), name: name.trim(), redirectUris: [...new Set(redirectUris)] }));
    },
    listOAuthClients: () => store.listOAuthClients(deps.sql),
    /** Deletes a client; its codes, refresh tokens and access tokens stop working at once, everywhere. */
    deleteOAuthClient: (clientId: string) =>
      change(async (tx, record) => {
        const ended = await store.deleteOAuthClient(tx, clientId);
        if (!ended) throw new AdminError(`No OAuth client ${clientId}.`);
        revokeEnded(record, ended);
      }),
    /** The job queue per queue (waiting, running, dead), and its dead jobs (server/jobs/dead-jobs.ts). */
    jobCounts: () => countJobs(deps.sql),
    deadJobs: (o: { queue?: string; limit: number }) => listDeadJobs(deps.sql, o),
    /** Dead jobs due again at once, attempts from zero: the running servers take them at their next poll. */
    retryDeadJobs: (s: DeadJobSelection) => retryDeadJobs(deps.sql, s),
    discardDeadJobs: (s: DeadJobSelection) => discardDeadJobs(deps.sql, s),
    /**
     * On a database without any user: an organization "My organization" (plan free) and its
     * owner with a random password. Returns the credentials, or null when users exist. Only the
     * password's hash is kept, so the caller shows it once, never through the logger.
     */
    bootstrapFirstOwner: (email: string) =>
      change(async (tx) => {
        await store.lockBootstrap(tx);
        if (await store.anyUserExists(tx)) return null;
        const password = randomString(20);
        const passwordHash = await Bun.password.hash(password, { algorithm: "argon2id" });
        const organization = await store.insertOrganization(tx, "My organization", "free");
        const user = await store.insertUser(tx, { name: "Administrator", email, passwordHash });
        await store.upsertMembership(tx, { userId: user.id, organizationId: organization.id, role: "owner", keepRole: false });
        return { email, password, organization: { id: organization.id, name: organization.name } };
      }),
  };
}

export type Admin = ReturnType<typeof createAdmin>;
