/**
 * The breaking-change guard (SPEC.md part 9). Compares the live v1 OpenAPI document with the
 * snapshot in docs/openapi-v1.json and fails on a breaking change. An intended break is made by
 * updating the snapshot (`bun run openapi:snapshot`) in a commit whose CHANGELOG.md change has a
 * line marked BREAKING; the second check below verifies exactly that from git history.
 *
 *   bun .ci/openapi-guard.ts            check (CI)
 *   bun .ci/openapi-guard.ts --update   rewrite the snapshot from the live document
 */
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { liveOpenApiDocument } from "./live-openapi";
import { addedRoutes, breakingChanges, type Change, type Document } from "./openapi-compat";

const SNAPSHOT = "docs/openapi-v1.json";
const root = join(import.meta.dir, "..");

/** Keys sorted, so the snapshot's diffs show what changed and nothing else. */
const stable = (doc: unknown) =>
  `${JSON.stringify(doc, (_k, v) => (v && typeof v === "object" && !Array.isArray(v) ? Object.fromEntries(Object.entries(v).sort(([a], [b]) => a.localeCompare(b))) : v), 2)}\n`;

const git = (...args: string[]) => {
  const r = Bun.spawnSync(["git", ...args], { cwd: root });
  return r.exitCode === 0 ? r.stdout.toString() : null;
};

const report = (changes: Change[]) => changes.map((c) => `  - ${c.kind}: ${c.where} (${c.detail})`).join("\n");

/** The snapshot's latest change, if breaking against its previous version, must be announced. */
function checkSnapshotHistory(): string | null {
  const commits = git("log", "-n", "2", "--format=%H", "--", SNAPSHOT)?.trim().split("\n").filter(Boolean) ?? [];
  if (commits.length < 2) return null;
  const [latest, previous] = commits as [string, string];
  const before = JSON.parse(git("show", `${previous}:${SNAPSHOT}`) ?? "{}") as Document;
  const after = JSON.parse(git("show", `${latest}:${SNAPSHOT}`) ?? "{}") as Document;
  const changes = breakingChanges(before, after);
  if (changes.length === 0) return null;
  const changelog = git("show", "--format=", latest, "--", "CHANGELOG.md") ?? "";
  if (changelog.split("\n").some((l) => l.startsWith("+") && /BREAKING/.test(l))) return null;
  return `commit ${latest.slice(0, 10)} updated ${SNAPSHOT} with breaking changes but its CHANGELOG.md change has no line marked BREAKING:\n${report(changes)}`;
}

const live = await liveOpenApiDocument<Document>();
const snapshotPath = join(root, SNAPSHOT);
if (process.argv.includes("--update") || !existsSync(snapshotPath)) {
  writeFileSync(snapshotPath, stable(live));
  console.log(`wrote ${SNAPSHOT} (${Object.keys(live.paths ?? {}).length} paths)`);
  process.exit(0);
}
const snapshot = JSON.parse(readFileSync(snapshotPath, "utf8")) as Document;
const changes = breakingChanges(snapshot, live);
const added = addedRoutes(snapshot, live);
let failed = false;
if (changes.length > 0) {
  failed = true;
  console.error(
    `Breaking changes against ${SNAPSHOT}:\n${report(changes)}\nIf they are intended: run \`bun run openapi:snapshot\`, add a CHANGELOG.md entry marked BREAKING, and commit both together.`,
  );
}
const history = checkSnapshotHistory();
if (history) {
  failed = true;
  console.error(history);
}
if (!failed && stable(live) !== stable(snapshot))
  console.log(
    `No breaking change. ${SNAPSHOT} is behind the code${added.length ? ` (new: ${added.join(", ")})` : ""}; refresh it with \`bun run openapi:snapshot\`.`,
  );
if (!failed) console.log(`OpenAPI guard: no breaking change against ${SNAPSHOT}.`);
process.exit(failed ? 1 : 0);
