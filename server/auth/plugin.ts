import { Elysia } from "elysia";
import { authorize, type Caller, type Rule } from "./caller";
import type { Credentials } from "./credentials";

type Authenticator = Pick<Credentials, "resolve">;

/** Each request's authorization: the caller the rule let through, or the error it raised. */
type Outcome = { caller: Caller } | { error: unknown };
const outcomes = new WeakMap<Request, Outcome>();

/**
 * A route's rule, optionally with `refine`: a further check of the authorized caller against the
 * raw request (for example a query parameter naming what is read), made at the same point, so
 * its 403 still comes before any 422. It must not trust the request beyond reading it.
 */
export type RouteRule = Rule & { refine?: (caller: Caller, request: Request) => void };

/** A route's rule applied to a resolved caller: its role or permission, then its `refine`; throws the refusal. */
export function authorizeRoute(resolved: Caller, request: Request, rule: RouteRule): Caller {
  const caller = authorize(resolved, rule);
  rule.refine?.(caller, request);
  return caller;
}

function judge(resolved: Caller, request: Request, rule: RouteRule): Outcome {
  try {
    return { caller: authorizeRoute(resolved, request, rule) };
  } catch (error) {
    return { error };
  }
}

/** At once for a caller the cache holds (most requests: no promise, no tick), else once the lookup has answered. */
function decide(auth: Authenticator, request: Request, rule: RouteRule): Outcome | Promise<Outcome> {
  let resolved: Caller | Promise<Caller>;
  try {
    resolved = auth.resolve(request);
  } catch (error) {
    return { error };
  }
  if (resolved instanceof Promise)
    return resolved.then(
      (caller) => judge(caller, request, rule),
      (error) => ({ error }),
    );
  return judge(resolved, request, rule);
}

/** Keeps the outcome for the later hooks; a refused caller's body is replaced by `{}` unread. */
function keep(request: Request, outcome: Outcome): Record<string, never> | undefined {
  outcomes.set(request, outcome);
  return "error" in outcome ? {} : undefined;
}

/** A route's rule as its OpenAPI operation carries it (`x-simhost-auth`). */
export const ruleDetail = (rule: Rule): Record<string, unknown> => ({ "x-simhost-auth": { apiKey: rule.apiKey, ...(rule.role ? { role: rule.role } : {}) } });

/**
 * Gives routes under it the `auth` option: a route declares its rule next to its path
 * (`{ auth: { apiKey: "numbers.read" } }`), and the caller is resolved from the Bearer token and
 * checked against the rule before the request is read: a request without a valid token answers
 * 401, one the rule refuses 403, whatever its body, query or path, and an unauthorized caller
 * learns nothing about a route's input rules (its body is not even parsed). The handler receives
 * the authorized `caller`; the OpenAPI operation carries the rule as `x-simhost-auth`.
 *
 * Elysia parses a body before its transform hooks run, so the decision is made in a parse hook
 * where there is a body (a refused caller's body is replaced by `{}` unread) and in the transform
 * hook otherwise; the transform hook raises a refusal before validation.
 */
export function callerPlugin(auth: Authenticator) {
  return new Elysia({ name: "simhost-caller" }).macro({
    auth: (rule: RouteRule) => ({
      detail: ruleDetail(rule),
      // Elysia awaits what a parse hook returns only when it is a promise.
      parse({ request }: { request: Request }) {
        const outcome = decide(auth, request, rule);
        return outcome instanceof Promise ? outcome.then((o) => keep(request, o)) : keep(request, outcome);
      },
      async transform({ request }: { request: Request }) {
        let outcome = outcomes.get(request);
        if (!outcome) outcomes.set(request, (outcome = await decide(auth, request, rule)));
        if ("error" in outcome) throw outcome.error;
      },
      resolve: ({ request }: { request: Request }) => ({ caller: (outcomes.get(request) as { caller: Caller }).caller }),
    }),
  });
}

/** The caller a route's `auth` rule let through for this request, if any (other plugins' hooks). */
export function callerOf(request: Request): Caller | undefined {
  const outcome = outcomes.get(request);
  return outcome && "caller" in outcome ? outcome.caller : undefined;
}
