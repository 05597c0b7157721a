import { validationFailed } from "../errors";
import { characterCount } from "../lib/fields";
import { VarName } from "./schema";

/** A recipient of a bulk send: a number, or a number with the values of the text's `{{name}}` variables. */
export type Recipient = string | { to: string; vars?: Record<string, string> };

export type SendRequest = {
  hosted_sim?: number;
  hosted_sims?: number[];
  to: string | Recipient[];
  text: string;
  send_at?: string;
  expires_at?: string;
};

/** What a send request asks for, checked: one text per recipient, and when to send and give up. */
export type PlannedSend = {
  /** True when `to` was an array: the answer is a batch. */
  bulk: boolean;
  recipients: { to: string; text: string }[];
  /** Null: at once (absent, or not ahead of now). */
  sendAt: Date | null;
  expiresAt: Date | null;
};

export const MAX_RECIPIENTS = 1000;
export const MAX_SCHEDULE_DAYS = 30;
export const MAX_TEXT = 1600;
/** POST /api/messages takes bodies up to 1 MiB (or MAX_BODY_BYTES when larger): room for 1000 recipients with their variables. */
export const SEND_BODY_BYTES = 1024 * 1024;
export const SEND_PATH = /^\/api(?:\/v\d+)?\/messages\/?$/;

const VARIABLE = /\{\{\s*([A-Za-z_][A-Za-z0-9_]*)\s*\}\}/g;
/** Anything written as a placeholder: one that is not a VARIABLE would be sent as written, braces and all. */
const PLACEHOLDER = /\{\{([^{}]*)\}\}/g;
const NAME = new RegExp(VarName);
/** What a variable's name is (VarName), for the errors of names that are none. */
const NAME_RULE = "letters, digits and _, not starting with a digit, at most 64";

/**
 * The texts of a bulk send with each recipient's `{{name}}` variables filled in. A variable the
 * text uses that a recipient gives no value for is a 422 naming it (at `to.N.vars`); so is a
 * filled text over 1600 characters. A single `to` (a string) is sent as written, braces and all,
 * as before bulk sends existed.
 */
function render(text: string, recipients: Recipient[], errors: Record<string, string[]>) {
  // A placeholder that is no variable ({{First Name}}, {{x.y}}) and a value under a name no text
  // can use would both leave the braces in every text sent.
  const unnamed = [...text.matchAll(PLACEHOLDER)].filter((m) => !NAME.test(m[1]!.trim())).map((m) => m[0]);
  if (unnamed.length > 0) errors.text = [`uses ${[...new Set(unnamed)].join(", ")}, not a variable: a name is ${NAME_RULE} (e.g. {{first_name}})`];
  recipients.forEach((r, i) => {
    for (const name of Object.keys(typeof r === "string" ? {} : (r.vars ?? {})))
      if (!NAME.test(name)) errors[`to.${i}.vars.${name}`] = [`is not a variable name: ${NAME_RULE} (e.g. first_name)`];
  });
  const matches = [...text.matchAll(VARIABLE)];
  const used = [...new Set(matches.map((m) => m[1]!))];
  // The text's own characters, without its {{name}}s: a filled text's length is this plus its
  // values, each as often as the text uses it, known before any text is built. Built first, a
  // text of 320 {{a}} with values of 1,000 characters made 1,000 texts of 320,000 (half a second).
  const literal = characterCount(text) - matches.reduce((n, m) => n + characterCount(m[0]), 0);
  const uses = new Map<string, number>();
  for (const m of matches) uses.set(m[1]!, (uses.get(m[1]!) ?? 0) + 1);
  return recipients.map((r, i) => {
    const to = typeof r === "string" ? r : r.to;
    if (used.length === 0) return { to, text };
    const vars = typeof r === "string" ? {} : (r.vars ?? {});
    const missing = used.filter((name) => !Object.hasOwn(vars, name));
    if (missing.length > 0) {
      errors[`to.${i}.vars`] = missing.map((name) => `has no value for the variable {{${name}}} the text uses`);
      return { to, text };
    }
    const length = used.reduce((n, name) => n + uses.get(name)! * characterCount(vars[name]!), literal);
    if (length > MAX_TEXT || length === 0) {
      errors[`to.${i}`] = [
        length === 0
          ? "makes an empty text once its variables are filled in"
          : `makes a text of more than ${MAX_TEXT} characters once its variables are filled in`,
      ];
      return { to, text };
    }
    return { to, text: text.replace(VARIABLE, (_all, name: string) => vars[name]!) };
  });
}

/** Checks what the schema cannot (times against now, duplicates, variables) and plans the send. 422 in API.md §1 shape. */
export function planSend(body: SendRequest, now: number): PlannedSend {
  const errors: Record<string, string[]> = {};
  const bulk = Array.isArray(body.to);
  // Read after "The hosted_sim field" in the error's message.
  if (body.hosted_sim === undefined && body.hosted_sims === undefined) errors.hosted_sim = ["is required, unless hosted_sims (a sender pool) is given"];
  else if (body.hosted_sim !== undefined && body.hosted_sims !== undefined)
    errors.hosted_sim = ["must not be given with hosted_sims: send from one number or from a pool"];
  let recipients: { to: string; text: string }[];
  if (Array.isArray(body.to)) {
    if (body.to.length === 0 || body.to.length > MAX_RECIPIENTS) throw validationFailed({ to: [`must hold 1 to ${MAX_RECIPIENTS} recipients`] });
    recipients = render(body.text, body.to, errors);
    const first = new Map<string, number>();
    recipients.forEach((r, i) => {
      const seen = first.get(r.to);
      if (seen === undefined) first.set(r.to, i);
      else errors[`to.${i}`] = [`repeats the recipient of to.${seen}; each number may appear once in a request`];
    });
  } else recipients = [{ to: body.to, text: body.text }];

  const requested = body.send_at === undefined ? null : Date.parse(body.send_at);
  if (requested !== null && requested > now + MAX_SCHEDULE_DAYS * 86_400_000) errors.send_at = [`must be at most ${MAX_SCHEDULE_DAYS} days ahead`];
  const sendAt = requested !== null && requested > now ? new Date(requested) : null;
  const expiresAt = body.expires_at === undefined ? null : new Date(body.expires_at);
  if (expiresAt && expiresAt.getTime() <= (sendAt?.getTime() ?? now))
    errors.expires_at = [sendAt ? "must be after send_at" : "must be in the future (after send_at, which is now when absent or past)"];
  if (Object.keys(errors).length > 0) throw validationFailed(errors);
  return { bulk, recipients, sendAt, expiresAt };
}
