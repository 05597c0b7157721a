import type { Sql } from "../db/client";

/** A pool number as operators see it: SPEC.md 2.1 fields and every organization using one of its seats. */
export type PoolNumber = {
  id: number;
  number: string;
  provider: string;
  status: string;
  type: string;
  shared_max_orgs: number;
  messages_received_count: number;
  organizations: { id: number; name: string; alias: string | null; team_id: number | null }[];
  teams: { id: number; name: string }[];
  created_at: string;
  updated_at: string;
};

export type NewPoolNumbers = { numbers: string[]; provider: string; type: "shared" | "virtual"; sharedMaxOrgs: number };

/** Numbers already in hosted_sims (pool or BYOS) among `numbers`, in order. */
export async function findTakenNumbers(sql: Sql, numbers: string[]): Promise<string[]> {
  const rows = await sql<{ number: string }[]>`select number from hosted_sims where number = any(${numbers}) order by number`;
  return rows.map((r) => r.number);
}

/** Adds pool numbers (provider numbers, not BYOS), free until ordered or claimed; returns their ids. */
export async function insertPoolNumbers(sql: Sql, n: NewPoolNumbers): Promise<number[]> {
  const rows = n.numbers.map((number) => ({ number, provider: n.provider, type: n.type, shared_max_orgs: n.sharedMaxOrgs }));
  const ids = await sql<{ id: number }[]>`insert into hosted_sims ${sql(rows, "number", "provider", "type", "shared_max_orgs")} returning id`;
  return ids.map((r) => r.id);
}

/** Pool numbers by id, or every pool number (BYOS device numbers are not pool numbers), optionally of one type. */
export async function findPoolNumbers(sql: Sql, where: { ids?: number[]; type?: string }): Promise<PoolNumber[]> {
  const rows = await sql<(Omit<PoolNumber, "created_at" | "updated_at"> & { created_at: Date; updated_at: Date })[]>`
    select h.id, h.number, h.provider, h.status, h.type, h.shared_max_orgs, h.messages_received_count, h.created_at, h.updated_at,
      coalesce((select json_agg(json_build_object('id', o.id, 'name', o.name, 'alias', a.alias, 'team_id', a.team_id) order by o.id)
                from hosted_sim_organizations a join organizations o on o.id = a.organization_id where a.hosted_sim_id = h.id), '[]') as organizations,
      coalesce((select json_agg(json_build_object('id', t.id, 'name', t.name) order by t.id)
                from hosted_sim_organizations a join teams t on t.id = a.team_id where a.hosted_sim_id = h.id), '[]') as teams
    from hosted_sims h
    where ${where.ids ? sql`h.id = any(${where.ids})` : sql`h.provider <> 'byos'`}
      ${where.type ? sql`and h.type = ${where.type}` : sql``}
    order by h.id`;
  return rows.map((r) => ({ ...r, created_at: r.created_at.toISOString(), updated_at: r.updated_at.toISOString() }));
}
