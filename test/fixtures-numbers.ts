import type { Pool, Sql } from "../server/db/client";
import { storeInboundMessage } from "../server/messages/inbound";

/** A random E.164 number no other test uses (10 random digits after +1 9). */
export function randomNumber(): string {
  const digits = Array.from(crypto.getRandomValues(new Uint8Array(10)), (b) => String(b % 10)).join("");
  return `+19${digits}`;
}

/** A pool number as an operator would add it: no organization yet. */
export async function createPoolNumber(
  sql: Sql,
  opts: { type?: "shared" | "virtual"; maxOrgs?: number; provider?: string; status?: "active" | "inactive"; number?: string } = {},
) {
  const type = opts.type ?? "shared";
  const [row] = await sql<{ id: number; number: string }[]>`
    insert into hosted_sims (number, provider, type, shared_max_orgs, status)
    values (${opts.number ?? randomNumber()}, ${opts.provider ?? "simprov"}, ${type}, ${opts.maxOrgs ?? (type === "shared" ? 5 : 1)}, ${opts.status ?? "active"})
    returning id, number`;
  return row!;
}

export async function attachNumber(sql: Sql, hostedSimId: number, organizationId: number, opts: { alias?: string; teamId?: number } = {}) {
  await sql`
    insert into hosted_sim_organizations (hosted_sim_id, organization_id, alias, team_id)
    values (${hostedSimId}, ${organizationId}, ${opts.alias ?? null}, ${opts.teamId ?? null})`;
}

/** A shared number already attached to the given organizations. */
export async function createSharedNumber(sql: Sql, orgIds: number[], opts: { maxOrgs?: number } = {}) {
  const sim = await createPoolNumber(sql, { maxOrgs: opts.maxOrgs });
  for (const org of orgIds) await attachNumber(sql, sim.id, org);
  return sim;
}

export async function createTeam(sql: Sql, organizationId: number, name = `team ${crypto.randomUUID().slice(0, 6)}`) {
  const [row] = await sql<{ id: number; name: string }[]>`insert into teams (organization_id, name) values (${organizationId}, ${name}) returning id, name`;
  return row!;
}

/**
 * A verified BYOS number: a device of the organization with an active SIM card in slot 1 and
 * its hosted SIM (type virtual, provider byos), attached to the organization unless `attach` is false.
 */
/**
 * `online`: the device is marked online (sends are handed to it at once); default offline (sends
 * wait for it). `seenAt`: its last heartbeat (default now); a test on a fake clock gives the
 * clock's time, or the server's presence takes the device for one silent since the real now and
 * marks it offline whenever its actor or the start's restore picks it up.
 */
export async function createByosNumber(
  sql: Sql,
  organizationId: number,
  opts: { attach?: boolean; deviceStatus?: string; simStatus?: string; online?: boolean; seenAt?: Date } = {},
) {
  const number = randomNumber();
  const [device] = await sql<{ id: number }[]>`
    insert into devices (organization_id, android_id, device_model, app_version, status, is_online, last_seen_at)
    values (${organizationId}, ${crypto.randomUUID().replaceAll("-", "").slice(0, 16)}, 'Pixel 8', '1.0.0', ${opts.deviceStatus ?? "active"},
            ${opts.online ?? false}, ${opts.online ? (opts.seenAt ?? new Date()) : null})
    returning id`;
  const [sim] = await sql<{ id: number }[]>`
    insert into hosted_sims (number, provider, type, shared_max_orgs) values (${number}, 'byos', 'virtual', 1) returning id`;
  await sql`
    insert into sim_cards (device_id, sim_slot, phone_number, status, hosted_sim_id)
    values (${device!.id}, 1, ${number}, ${opts.simStatus ?? "active"}, ${sim!.id})`;
  if (opts.attach !== false) await attachNumber(sql, sim!.id, organizationId);
  return { deviceId: device!.id, hostedSimId: sim!.id, number };
}

/** An inbound SMS arriving on a number now, through the one entry point the server uses. */
export async function receiveSms(sql: Pool, hostedSimId: number, opts: { from?: string; text?: string; receivedAt?: Date } = {}) {
  const stored = await sql.begin((tx) =>
    storeInboundMessage(tx, {
      hostedSimId,
      from: opts.from ?? "+15550001111",
      text: opts.text ?? `hello ${crypto.randomUUID().slice(0, 8)}`,
      source: "provider",
      externalId: `SM${crypto.randomUUID().replaceAll("-", "")}`,
      receivedAt: opts.receivedAt ?? new Date(),
    }),
  );
  return stored!;
}

/** Polls until `check` returns a truthy value (events over Redis, background jobs), failing after `ms`. */
export async function eventually<T>(check: () => T | Promise<T>, ms = 5000, what = "condition"): Promise<Exclude<T, false | null | undefined | 0 | "">> {
  const deadline = Date.now() + ms;
  for (;;) {
    const value = await check();
    if (value) return value as Exclude<T, false | null | undefined | 0 | "">;
    if (Date.now() > deadline) throw new Error(`timed out after ${ms} ms waiting for ${what}`);
    await Bun.sleep(20);
  }
}

/**
 * Holds the row locks `take` acquires, in a transaction of its own, until the returned function
 * is called (it waits for that transaction to end); resolves once they are held. PostgreSQL only:
 * the embedded database runs one session at a time, so a held lock would stop every other query.
 */
export async function holdLocks(sql: Pool, take: (tx: Sql) => Promise<unknown>): Promise<() => Promise<void>> {
  let release!: () => void;
  const held = new Promise<void>((r) => (release = r));
  let locked!: () => void;
  const isLocked = new Promise<void>((r) => (locked = r));
  const holder = sql.begin(async (tx) => {
    await take(tx);
    locked();
    await held;
  });
  await Promise.race([isLocked, holder]);
  return async () => {
    release();
    await holder;
  };
}

/** Polls until at least `n` lock requests of this database wait for a lock (pg_locks), failing after 5 s. */
export const lockWaiters = (sql: Sql, n: number) =>
  eventually(
    async () => {
      const [row] = await sql<{ n: number }[]>`
        select count(*)::int as n from pg_locks l join pg_stat_activity a using (pid) where not l.granted and a.datname = current_database()`;
      return (row?.n ?? 0) >= n;
    },
    5000,
    `${n} lock requests waiting`,
  );

/** Gives an organization a default sending policy that hardly paces (600 a minute, no pause), for tests about something else. */
export async function unpaced(sql: Sql, organizationId: number) {
  await sql`
    insert into sending_policies (organization_id, messages_per_minute, min_delay_ms, max_delay_ms, daily_cap, time_zone)
    values (${organizationId}, 600, 0, 0, 100000, 'UTC')`;
}

/** Fills an organization's month with `n` outbound messages already sent, so that its quota has `limit - n` left. */
export async function useQuota(sql: Sql, organizationId: number, sim: { id: number; number: string }, n: number) {
  // Counted as sends count them (server/messages/outbound-store.ts takeQuota).
  await sql`
    with sent as (
      insert into messages (hosted_sim_id, number, direction, from_number, to_number, text, status, source, organization_id)
      select ${sim.id}, ${sim.number}, 'outbound', ${sim.number}, '+15550009999', 'old', 'sent', 'api', ${organizationId} from generate_series(1, ${n}))
    insert into outbound_usage as u (organization_id, month, used) values (${organizationId}, date_trunc('month', now() at time zone 'UTC')::date, ${n})
    on conflict (organization_id, month) do update set used = u.used + excluded.used`;
}
