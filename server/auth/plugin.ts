import { Elysia } from "elysia";
import { type Authenticator, authorize, type Caller, type Rule } from "./caller";

/**
 * Gives every route under it `caller(rule)`: resolves the Bearer token and enforces the rule,
 * throwing the API.md §1 error (401/403/404) otherwise. The token is resolved when the handler
 * calls `caller`, which is after Elysia's schema validation: a request with an invalid body
 * answers 422 whether or not its token is good.
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
