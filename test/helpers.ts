import { cpSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import postgres from "postgres";
import { buildApp } from "../server/app";
import { loadConfig } from "../server/config";
import { type Database, embeddedDir, openDatabase } from "../server/db/client";
import { migrate } from "../server/db/migrate";
import { randomString } from "../server/lib/crypto";
import { createServices, type Services } from "../server/services";
import { createResponseCheck, type OpenApiDocument } from "./response-schemas";
import { temporaryFolders } from "./temporary-folders";

export type TestContext = Awaited<ReturnType<typeof createTestContext>>;

/**
 * The app in-process against a real, migrated database: PostgreSQL when DATABASE_URL is set,
 * otherwise an embedded one in a temporary folder. Tests keep apart by creating their own
 * organizations and users, so they share one database per process. A context's database is a
 * copy of one migrated once per process (migratedDatabase, migratedEmbeddedDataDir): creating
 * and migrating a database per context cost more than most test files' tests.
 */
export async function createTestContext(env: Record<string, string> = {}) {
  const databaseUrl = env.DATABASE_URL ?? (process.env.DATABASE_URL ? await migratedDatabase(process.env.DATABASE_URL) : undefined);
  const dataDir = databaseUrl || env.DATA_DIR !== undefined ? mkdtempSync(join(tmpdir(), "simhost-test-")) : await migratedEmbeddedDataDir();
  temporaryFolders.add(dataDir);
  const config = loadConfig({
    ...process.env,
    ...(databaseUrl ? { DATABASE_URL: databaseUrl } : {}),
    DATA_DIR: dataDir,
    PUBLIC_URL: "http://localhost:3000",
    WEBHOOK_ALLOW_PRIVATE: "true",
    REDIS_PREFIX: `simhost-test-${randomString(8)}:`,
    ...env,
  });
  const services = await createServices(config);
  const app = buildApp(services);

  const request = checkedRequests(app);
  const close = async () => {
    await services.close();
    rmSync(dataDir, { recursive: true, force: true });
    temporaryFolders.delete(dataDir);
  };
  return { services, app, config, sql: services.sql, request, close };
}

let initialized: Promise<string> | undefined;
let migrated: Promise<string> | undefined;

/**
 * A new DATA_DIR holding an empty embedded database: a copy of one created once per process
 * (creating the cluster is most of an embedded database's start; a copy takes a fraction).
 */
export async function emptyEmbeddedDataDir(): Promise<string> {
  initialized ??= prepared(mkdtempSync(join(tmpdir(), "simhost-template-")), async () => {});
  return copyOf(await initialized);
}

/** The same with every migration applied: the migrations run once per process. */
export async function migratedEmbeddedDataDir(): Promise<string> {
  migrated ??= emptyEmbeddedDataDir().then((dataDir) => prepared(dataDir, (sql) => migrate(sql)));
  return copyOf(await migrated);
}

/** Opens the embedded database in `dataDir`, runs `prepare`, closes it. */
async function prepared(dataDir: string, prepare: (sql: Database["sql"]) => Promise<unknown>): Promise<string> {
  temporaryFolders.add(dataDir);
  const db = await openDatabase({ DATABASE_URL: undefined, DATA_DIR: dataDir });
  try {
    await prepare(db.sql);
  } finally {
    await db.close();
  }
  return dataDir;
}

function copyOf(template: string): string {
  const dataDir = mkdtempSync(join(tmpdir(), "simhost-test-"));
  temporaryFolders.add(dataDir);
  cpSync(embeddedDir(template), embeddedDir(dataDir), { recursive: true });
  return dataDir;
}

const templates = new Map<string, Promise<string>>();
/**
 * An empty database of the kind this run uses, opened as the server opens it: a new database on
 * DATABASE_URL's PostgreSQL, or a new embedded one. The caller closes it.
 */
export async function openEmptyDatabase(): Promise<Database> {
  const url = process.env.DATABASE_URL ? await freshDatabase(process.env.DATABASE_URL) : undefined;
  return openDatabase({ DATABASE_URL: url, DATA_DIR: url ? mkdtempSync(join(tmpdir(), "simhost-db-")) : await emptyEmbeddedDataDir() });
}

/**
 * A fresh database (freshDatabase) with every migration applied: a copy of a template database
 * that this process migrated once (CREATE DATABASE ... TEMPLATE), not the migrations run again.
 */
export async function migratedDatabase(url: string): Promise<string> {
  let template = templates.get(url);
  if (!template) {
    template = (async () => {
      const templateUrl = await freshDatabase(url);
      const sql = postgres(templateUrl, { max: 1, onnotice: () => {} });
      try {
        await migrate(sql);
      } finally {
        await sql.end();
      }
      return new URL(templateUrl).pathname.slice(1);
    })();
    templates.set(url, template);
  }
  return freshDatabase(url, await template);
}

/**
 * A new database on the server of `url` for one test process, so runs never see each other's
 * rows or half-written migrations: empty, or a copy of `template`. Databases of runs older than
 * two hours are dropped.
 */
export async function freshDatabase(url: string, template?: string): Promise<string> {
  const admin = postgres(url, { max: 1, onnotice: () => {} });
  try {
    const stale = await admin<{ datname: string }[]>`select datname from pg_database where datname like 'simhost_t_%'`;
    const cutoff = Math.floor(Date.now() / 1000) - 7200;
    for (const { datname } of stale) {
      const created = Number(datname.split("_")[2]);
      if (created < cutoff) await admin.unsafe(`drop database if exists "${datname}" with (force)`).catch(() => {});
    }
    const name = `simhost_t_${Math.floor(Date.now() / 1000)}_${randomString(6).toLowerCase()}`;
    await admin.unsafe(`create database "${name}"${template ? ` template "${template}"` : ""}`);
    // A test database's commits need not wait for the disk (nothing here survives a crash of the
    // PostgreSQL server, which no test causes on this one: the outage test runs its own cluster).
    // What a transaction sees and when it is visible are unchanged; on a virtual disk the flush
    // was most of the PostgreSQL half's waiting (the 1,000-send pacing test: 51 s, 0.6 s of it CPU).
    await admin.unsafe(`alter database "${name}" set synchronous_commit = off`);
    const u = new URL(url);
    u.pathname = `/${name}`;
    return u.toString();
  } finally {
    await admin.end();
  }
}

export type RequestOptions = { token?: string; body?: unknown; headers?: Record<string, string>; form?: Record<string, string> };

/** A request as API clients send it: Bearer token, JSON body (or form data), extra headers. */
export function buildRequest(base: string, method: string, path: string, opts: RequestOptions = {}, init: RequestInit = {}): Request {
  const headers: Record<string, string> = { ...opts.headers };
  if (opts.token) headers.authorization = `Bearer ${opts.token}`;
  let body: string | undefined;
  if (opts.form) {
    headers["content-type"] = "application/x-www-form-urlencoded";
    body = new URLSearchParams(opts.form).toString();
  } else if (opts.body !== undefined) {
    headers["content-type"] ??= "application/json";
    body = typeof opts.body === "string" ? opts.body : JSON.stringify(opts.body);
  }
  return new Request(`${base}${path}`, { ...init, method, headers, body });
}

/** Status, headers, raw text and the JSON body (null when the answer is not JSON). */
export async function readResponse(res: Response) {
  const text = await res.text();
  let json: any = null;
  try {
    json = text ? JSON.parse(text) : null;
  } catch {
    json = null;
  }
  return { status: res.status, headers: res.headers, body: json, text };
}

/** `request` of a test context: an in-process request whose answer is checked against the app's OpenAPI document. */
export function checkedRequests(app: { handle: (request: Request) => Promise<Response> }) {
  let check: Promise<ReturnType<typeof createResponseCheck>> | undefined;
  return async (method: string, path: string, opts: RequestOptions = {}) => {
    const res = await readResponse(await app.handle(buildRequest("http://localhost:3000", method, path, opts)));
    check ??= app.handle(new Request("http://localhost:3000/openapi.json")).then(async (r) => createResponseCheck((await r.json()) as OpenApiDocument));
    expectDocumented((await check)(method, path, res.status, res.headers.get("content-type"), res.text));
    return res;
  };
}

/**
 * Every answer `request` reads is checked against the OpenAPI document (test/response-schemas.ts).
 * A mismatch fails the test that saw it at once, and is listed again when the process ends.
 */
export const responseMismatches: string[] = [];
function expectDocumented(mismatch: string | null) {
  if (!mismatch) return;
  responseMismatches.push(mismatch);
  throw new Error(`response contradicts the OpenAPI document: ${mismatch}`);
}
process.on("exit", () => {
  if (responseMismatches.length > 0)
    console.error(`${responseMismatches.length} response(s) contradicted the OpenAPI document:\n${responseMismatches.join("\n")}`);
});

let shared: Promise<TestContext> | undefined;
/** One context for all test files of a run (they execute in one process). */
export function sharedTestContext(): Promise<TestContext> {
  shared ??= createTestContext();
  return shared;
}

/**
 * Two app instances on one fresh database and one Redis prefix, as two servers of a deployment
 * (needs DATABASE_URL and REDIS_URL); `close` closes both.
 */
export async function twoInstances() {
  const url = await migratedDatabase(process.env.DATABASE_URL!);
  const prefix = `simhost-test-${crypto.randomUUID().slice(0, 8)}:`;
  const a = await createTestContext({ DATABASE_URL: url, REDIS_PREFIX: prefix });
  const b = await createTestContext({ DATABASE_URL: url, REDIS_PREFIX: prefix });
  return { a, b, close: async () => void (await Promise.all([a.close(), b.close()])) };
}

/** Asserts the API.md §1 error shape and returns the body. */
export function expectErrorShape(body: any, code?: string) {
  if (typeof body?.message !== "string" || typeof body?.code !== "string") throw new Error(`not an API error body: ${JSON.stringify(body)}`);
  const allowed = new Set(["message", "code", "errors", "locked_until", "device_id"]);
  for (const k of Object.keys(body)) if (!allowed.has(k)) throw new Error(`unexpected key ${k} in error body`);
  if (code && body.code !== code) throw new Error(`expected code ${code}, got ${body.code}: ${body.message}`);
  return body;
}

export type { Services };
