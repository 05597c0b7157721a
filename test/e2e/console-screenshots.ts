/**
 * Regenerates the screenshots of docs/console.md: every page of the console with example data,
 * in headless Chromium against a real server (embedded database in a temporary folder).
 *
 *   DATABASE_URL="" REDIS_URL="" bun test/e2e/console-screenshots.ts [out dir, default docs/console]
 */
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { sendThroughProvider } from "../../device-sim/provider";
import { createApiKey, sessionFor } from "../fixtures";
import { attachNumber, createPoolNumber, createTeam, receiveSms } from "../fixtures-numbers";
import { createMember, newContext, signIn, startConsoleWorld, stopConsoleWorld } from "./console-helpers";
import { activeDeviceIn } from "./console-seed";

const out = process.argv[2] ?? join(import.meta.dir, "../../docs/console");
mkdirSync(out, { recursive: true });
const w = await startConsoleWorld({ LOG_LEVEL: "warn" });
try {
  if (!w.browser) throw new Error("No Chromium: set CHROMIUM_PATH or install chromium.");
  const { user, orgId } = await createMember(w.ctx.sql, { orgName: "Acme QA" });
  await w.ctx.sql`update users set name = 'Ada Admin' where id = ${user.id}`;
  const team = await createTeam(w.ctx.sql, orgId, "Checkout");
  await w.ctx.sql`insert into team_members (team_id, user_id) values (${team.id}, ${user.id})`;
  const signup = await createPoolNumber(w.ctx.sql, { number: "+15550100001" });
  await attachNumber(w.ctx.sql, signup.id, orgId, { alias: "signup tests" });
  const login = await createPoolNumber(w.ctx.sql, { number: "+15550100002" });
  await attachNumber(w.ctx.sql, login.id, orgId, { alias: "login 2FA", teamId: team.id });
  await receiveSms(w.ctx.sql, signup.id, { from: "+15550009999", text: "Welcome to Acme! Reply STOP to opt out." });
  await receiveSms(w.ctx.sql, login.id, { from: "ACME", text: "Your Acme login code is 318 204" });
  await createApiKey(w.ctx.sql, orgId, ["numbers.read", "messages.read"]);
  await w.ctx.sql`update api_keys set name = 'CI signup tests' where organization_id = ${orgId}`;
  // A second session (another browser), listed on the account page.
  const token = await sessionFor(w.ctx.sql, user.id);
  const hook = await fetch(`${w.base}/api/webhook-integrations`, {
    method: "POST",
    headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
    body: JSON.stringify({ name: "CI receiver", url: "https://ci.example.test/hooks/sms" }),
  });
  const { data } = (await hook.json()) as { data: { id: number } };
  await fetch(`${w.base}/api/webhook-integrations/${data.id}/mappings`, {
    method: "POST",
    headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
    body: JSON.stringify({ team_id: team.id, forwarding_mode: "always" }),
  });
  await activeDeviceIn(w, orgId, "Pixel 8 (lab)");

  const context = await newContext(w);
  const page = await context.newPage();
  await page.goto("/");
  await page.screenshot({ path: join(out, "sign-in.png") });
  await signIn(page, user.email, undefined, "/numbers");
  const shots: [string, string, string][] = [
    ["numbers", "/numbers", "signup tests"],
    ["devices", "/devices", "Pixel 8 (lab)"],
    ["webhooks", "/webhooks", "CI receiver"],
    ["api-keys", "/api-keys", "CI signup tests"],
    ["teams", "/teams", "Checkout"],
    ["account", "/account", "Sign out all other sessions"],
    ["plan", "/plan", "Messages sent in"],
    ["inbox-all", "/inbox", "318 204"],
  ];
  for (const [name, path, text] of shots) {
    await page.goto(path);
    await page.getByText(text).first().waitFor();
    await page.screenshot({ path: join(out, `${name}.png`), fullPage: true });
  }
  await page.goto(`/inbox?number=${signup.id}`);
  await page.getByText("Live", { exact: true }).waitFor();
  await sendThroughProvider(w.provider.url, { from: "+15550002222", to: signup.number, body: "Your Acme verification code is 482913" });
  await page.getByText("482913", { exact: true }).waitFor();
  await page.screenshot({ path: join(out, "inbox.png"), fullPage: true });
  await page.setViewportSize({ width: 375, height: 760 });
  await page.screenshot({ path: join(out, "inbox-375.png") });
  await context.close();
  console.log(`screenshots written to ${out}`);
} finally {
  await stopConsoleWorld(w);
}
