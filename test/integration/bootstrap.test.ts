import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { bootstrapFirstOwner, FIRST_OWNER_EMAIL, firstOwnerNotice } from "../../server/bootstrap";
import { createTestContext, type TestContext } from "../helpers";

// A context of its own: the first owner is made only on a database without users.
let ctx: TestContext;
beforeAll(async () => {
  ctx = await createTestContext();
});
afterAll(() => ctx?.close());

describe("first-owner bootstrap", () => {
  test("an empty database gets one owner of 'My organization' (free), concurrent starts included; never again", async () => {
    const results = await Promise.all([bootstrapFirstOwner(ctx.sql), bootstrapFirstOwner(ctx.sql)]);
    const made = results.filter((r) => r !== null);
    expect(made).toHaveLength(1);
    const owner = made[0]!;
    expect(owner.email).toBe(FIRST_OWNER_EMAIL);
    expect(owner.password).toMatch(/^[0-9A-Za-z]{20}$/);

    const rows = await ctx.sql`
      select u.email, u.password_hash, m.role, o.name, o.plan
      from users u join memberships m on m.user_id = u.id join organizations o on o.id = m.organization_id`;
    expect(rows).toHaveLength(1);
    expect(rows[0]).toMatchObject({ email: FIRST_OWNER_EMAIL, role: "owner", name: "My organization", plan: "free" });
    expect(rows[0]!.password_hash).toStartWith("$argon2id$");
    expect(rows[0]!.password_hash).not.toContain(owner.password);
    expect(await Bun.password.verify(owner.password, rows[0]!.password_hash)).toBe(true);

    expect(await bootstrapFirstOwner(ctx.sql)).toBeNull();
    expect(await ctx.sql`select id from users`).toHaveLength(1);
  });

  test("the notice shows the credentials and a login command for the public URL", () => {
    const text = firstOwnerNotice(
      { email: FIRST_OWNER_EMAIL, password: "p4ssw0rdp4ssw0rdp4ss", organization: { id: 1, name: "My organization" } },
      "http://localhost:3000",
    );
    expect(text).toContain("p4ssw0rdp4ssw0rdp4ss");
    expect(text).toContain(`curl -s -X POST http://localhost:3000/api/auth/login`);
    expect(text).toContain(`"email":"${FIRST_OWNER_EMAIL}"`);
  });
});
