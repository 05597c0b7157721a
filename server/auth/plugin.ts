import { Elysia } from "elysia";
import { type Authenticator, authorize, type Caller, type Rule } from "./caller";

/**
 * Gives every route under it `caller(rule)`: resolves the Bearer token and enforces the rule,
 * throwing the API.md §1 error (401/403/404) otherwise. Runs before body validation, so an
 * unauthenticated request gets 401, not 422.
 */
export function callerPlugin(auth: Authenticator) {
  return new Elysia({ name: "simhost-caller" }).derive({ as: "scoped" }, ({ request }) => {
    let resolved: Promise<Caller> | undefined;
    return {
      caller: async (rule: Rule) => {
        resolved ??= auth.resolve(request);
        return authorize(await resolved, rule);
      },
    };
  });
}
