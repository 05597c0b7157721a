import { Elysia } from "elysia";
import { type Authenticator, authorize, type Caller, type Rule } from "./caller";

/**
 * Gives every route under it `caller(rule)`, which enforces the route's rule on the caller
 * (403/404 otherwise). The Bearer token itself is resolved before the body is validated, so a
 * request without a valid token answers 401 whatever its body, and an anonymous caller learns
 * nothing about a route's input rules. Routes that must answer without a token (logins,
 * CORS preflights) live outside the plugin, or use `{ lazy: true }`: the token is then resolved
 * only when the handler calls `caller`, after validation.
 */
export function callerPlugin(auth: Authenticator, opts: { lazy?: boolean } = {}) {
  if (opts.lazy) {
    return new Elysia({ name: "simhost-caller-lazy" }).derive({ as: "scoped" }, ({ request }) => {
      let resolved: Promise<Caller> | undefined;
      return {
        caller: async (rule: Rule) => {
          resolved ??= auth.resolve(request);
          return authorize(await resolved, rule);
        },
      };
    });
  }
  return new Elysia({ name: "simhost-caller" }).derive({ as: "scoped" }, async ({ request }) => {
    const resolved = await auth.resolve(request);
    return { caller: async (rule: Rule) => authorize(resolved, rule) };
  });
}
