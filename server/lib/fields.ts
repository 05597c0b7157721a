import { Kind, type TNull, type TOptional, type TSchema, type TUnion, type TUnsafe, Type, TypeRegistry } from "@sinclair/typebox";
import { t } from "elysia";

/**
 * The request field types every schema.ts shares, so what a client may send as an id or a
 * date is decided here once: anything else is 422 `validation_failed`, never a value that
 * reaches PostgreSQL and fails there (500) or is silently rolled over (2026-02-30 → March 2).
 */

/** Ids are bigint columns read back as JS numbers: positive integers up to 2^53 − 1. */
export const ID_MAX = Number.MAX_SAFE_INTEGER;
const ID_BOUNDS = { minimum: 1, maximum: ID_MAX };

/** A JSON id field (`team_id`, `hosted_sim_id`): an integer number, 1 to 2^53 − 1. */
export const Id = (options: { description?: string } = {}) => Type.Integer({ ...ID_BOUNDS, ...options });

const DIGITS = /^(0|[1-9][0-9]{0,15})$/;
// A kind of its own, checked here: Elysia coerces plain numeric schemas in paths and queries
// with `+value`, which lets "1e3", "0x10" or " 7" through (and "1.5" into SQL as a page number).
TypeRegistry.Set<{ minimum: number; maximum: number }>("IntegerParam", (schema, value) => {
  const n = typeof value === "string" ? (DIGITS.test(value) ? Number(value) : Number.NaN) : value;
  return typeof n === "number" && Number.isInteger(n) && n >= schema.minimum && n <= schema.maximum;
});

/**
 * A whole-number path or query parameter from `minimum` to `maximum`: decimal digits only (no
 * sign, fraction, exponent, leading zero or spaces), handed to the route as a number. Documented
 * as OpenAPI has always shown these parameters: a string of digits or a number.
 */
export function IntegerParam(minimum: number, maximum: number, options: { description?: string; errorMessage?: string } = {}) {
  const schema = Type.Unsafe<string | number>({
    [Kind]: "IntegerParam",
    minimum,
    maximum,
    // TypeBox schemas (not bare JSON) so Elysia's exact mirror can compile them; the document is the same.
    anyOf: [Type.String({ format: "integer" }), Type.Number({ multipleOf: 1, minimum, maximum })],
    errorMessage: options.errorMessage ?? "must be an integer",
    ...(options.description ? { description: options.description } : {}),
  });
  return t
    .Transform(schema)
    .Decode((value) => Number(value))
    .Encode((value) => value);
}

/** A path or query id: 1 to 2^53 − 1, digits only. */
export const IdParam = () => IntegerParam(1, ID_MAX, { description: "a positive integer id", errorMessage: "must be a positive integer id" });

/** The instants a client may send: what a message or a query can sensibly mean, and PostgreSQL can hold. */
export const DATE_TIME_MIN = Date.UTC(1970, 0, 1);
export const DATE_TIME_MAX = Date.UTC(9999, 11, 31, 23, 59, 59, 999);
const RFC3339 = /^(\d{4})-(\d{2})-(\d{2})[Tt ](\d{2}):(\d{2}):(\d{2})(\.\d{1,9})?([Zz]|[+-](\d{2}):(\d{2}))$/;

const daysIn = (year: number, month: number) => new Date(Date.UTC(year, month, 0)).getUTCDate();

/**
 * Whether `value` is an RFC 3339 date-time with an offset, on a real calendar day and a real
 * time of day, between 1970-01-01 and 9999-12-31 (UTC), as PostgreSQL stores it: an offset of at
 * most ±15:59 (its limit; the world's reach ±14:00), and the instant rounded to microseconds
 * (23:59:59.9999995 on 9999-12-31 is year 10000, which no later statement could write).
 */
export function isDateTime(value: unknown): value is string {
  if (typeof value !== "string") return false;
  const m = RFC3339.exec(value);
  if (!m) return false;
  const [year, month, day, hour, minute, second] = m.slice(1, 7).map(Number) as [number, number, number, number, number, number];
  if (month < 1 || month > 12 || day < 1 || day > daysIn(year, month)) return false;
  if (hour > 23 || minute > 59 || second > 59) return false;
  if (m[9] !== undefined && (Number(m[9]) > 15 || Number(m[10]) > 59)) return false;
  // Date.parse keeps milliseconds; the microseconds PostgreSQL rounds to may reach the next one.
  const fraction = (m[7] ?? ".").slice(1).padEnd(9, "0");
  const nextMs = Number(fraction.slice(3, 6)) + (Number(fraction[6]) >= 5 ? 1 : 0) === 1000 ? 1 : 0;
  const ms = Date.parse(value.replace(" ", "T")) + nextMs;
  return ms >= DATE_TIME_MIN && ms <= DATE_TIME_MAX;
}

TypeRegistry.Set("DateTime", (_schema, value) => isDateTime(value));

/** A date-time a client sends (`received_at`, `since`): see `isDateTime`. Documented as a date-time string. */
export const DateTime = (note?: string): TUnsafe<string> =>
  Type.Unsafe<string>({
    [Kind]: "DateTime",
    type: "string",
    format: "date-time",
    description: `an ISO 8601 date-time with offset between 1970 and 9999${note ? `, ${note}` : ""}`,
  });

/**
 * Lengths of text count Unicode code points, as PostgreSQL's length() and SMS segmenting do:
 * "😀" is one character (two UTF-16 units), "é" written as e + combining accent is two.
 */
export function characterCount(text: string): number {
  let n = 0;
  for (const _ of text) n++;
  return n;
}

type TextOptions = { minLength?: number; maxLength?: number; pattern?: string; format?: string; description?: string };

// A kind of its own: TypeBox's maxLength counts UTF-16 units, so 801 emoji would pass for 1602
// characters. Lone surrogates are refused: PostgreSQL's UTF-8 text cannot hold them.
TypeRegistry.Set<TextOptions>("Text", (schema, value) => {
  if (typeof value !== "string" || !value.isWellFormed()) return false;
  const n = schema.minLength === undefined && schema.maxLength === undefined ? 0 : characterCount(value);
  if (schema.minLength !== undefined && n < schema.minLength) return false;
  if (schema.maxLength !== undefined && n > schema.maxLength) return false;
  return schema.pattern === undefined || patternOf(schema.pattern).test(value);
});

/** Each `Text` pattern compiled once, not on every check. */
const patterns = new Map<string, RegExp>();
function patternOf(source: string): RegExp {
  let pattern = patterns.get(source);
  if (!pattern) patterns.set(source, (pattern = new RegExp(source, "u")));
  return pattern;
}

/**
 * A text field whose bounds count characters (code points, see `characterCount`). The document
 * keeps `minLength`/`maxLength` to show the bounds; the check itself is this kind's.
 */
export const Text = (options: TextOptions = {}): TUnsafe<string> => Type.Unsafe<string>({ [Kind]: "Text", type: "string", ...options });

/**
 * An optional request field that also takes `null`, as Kotlin and Swift encoders send for an unset
 * value. `absent`: null means the field was not sent (it is removed before validation, by
 * `dropAbsentNulls`); `clears`: null is a value the resource holds (no alias, no slot).
 * The static type stays the field's own for `absent`, since handlers never see that null.
 */
export function Optional<T extends TSchema>(schema: T, nullMeans: "absent"): TOptional<T>;
export function Optional<T extends TSchema>(schema: T, nullMeans: "clears"): TOptional<TUnion<[T, TNull]>>;
export function Optional<T extends TSchema>(schema: T, nullMeans: "absent" | "clears" = "absent") {
  // server/lib/openapi.ts adds what null means to the field's description in the document.
  if (nullMeans === "clears") return Type.Optional(Type.Union([schema, Type.Null()], { description: schema.description, "x-null-means": nullMeans }));
  // The null is gone before validation, so the check stays the field's own (and its errors keep
  // their paths, `sim_cards.0.signal_strength`); the document shows `nullable`.
  return Type.Optional({ ...schema, nullable: true, "x-null-means": nullMeans } as T);
}

/** What `dropAbsentNulls` does to values of one schema: worked out once per schema, not per request. */
type NullPlan = { absent: string[]; nested: [string, NullPlan][]; items: NullPlan | null };
/** null: nothing under this schema can hold an absent-meaning null. */
const nullPlans = new WeakMap<TSchema, NullPlan | null>();

function nullPlanOf(schema: TSchema): NullPlan | null {
  if (nullPlans.has(schema)) return nullPlans.get(schema) ?? null;
  nullPlans.set(schema, null); // a schema that refers to itself stops here
  const items = schema.items ? nullPlanOf(schema.items as TSchema) : null;
  const absent: string[] = [];
  const nested: [string, NullPlan][] = [];
  for (const [key, field] of Object.entries((schema.properties ?? {}) as Record<string, TSchema>)) {
    if (field["x-null-means"] === "absent") absent.push(key);
    const inner = field.anyOf ? (field.anyOf as TSchema[]).find((s) => s.type === "object" || s.type === "array") : field;
    const plan = inner ? nullPlanOf(inner) : null;
    if (plan) nested.push([key, plan]);
  }
  const plan = items || absent.length > 0 || nested.length > 0 ? { absent, nested, items } : null;
  nullPlans.set(schema, plan);
  return plan;
}

function dropByPlan(plan: NullPlan, value: unknown): void {
  if (typeof value !== "object" || value === null) return;
  if (Array.isArray(value)) {
    if (plan.items) for (const item of value) dropByPlan(plan.items, item);
    return;
  }
  const record = value as Record<string, unknown>;
  for (const key of plan.absent) if (record[key] === null) delete record[key];
  for (const [key, inner] of plan.nested) dropByPlan(inner, record[key]);
}

/** Removes the `null`s that mean "not sent" (see `Optional`) from a request body, in place, following its schema. */
export function dropAbsentNulls(schema: TSchema | undefined, value: unknown): void {
  if (!schema || typeof value !== "object" || value === null) return;
  const plan = nullPlanOf(schema);
  if (plan) dropByPlan(plan, value);
}

/**
 * Text from a party we store rather than refuse (a provider's callback or answer, a webhook
 * receiver's answer), each NUL as U+FFFD: no PostgreSQL text holds a NUL, and the write failing on
 * one failed whatever shared its statement (a webhook record batch, a provider send's outcome).
 */
export const storableText = (text: string) => text.replaceAll("\0", "\uFFFD");
