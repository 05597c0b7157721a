import { Value } from "@sinclair/typebox/value";
import { characterCount } from "./fields";

type SchemaLike = {
  type?: string | string[];
  anyOf?: SchemaLike[];
  const?: unknown;
  minimum?: number;
  maximum?: number;
  exclusiveMinimum?: number;
  minLength?: number;
  maxLength?: number;
  minItems?: number;
  maxItems?: number;
  maxProperties?: number;
  uniqueItems?: boolean;
  pattern?: string;
  format?: string;
  description?: string;
  errorMessage?: string;
};
type Issue = { path: string; value: unknown; schema?: SchemaLike; message?: string };

const article = (t: string) => (/^[aeiou]/.test(t) ? `an ${t}` : `a ${t}`);

function typeName(schema: SchemaLike): string | undefined {
  if (schema.anyOf) {
    const consts = schema.anyOf.map((s) => s.const).filter((c) => c !== undefined);
    if (consts.length === schema.anyOf.length) return undefined;
    return schema.anyOf.map(typeName).find((n) => n && n !== "string" && n !== "null") ?? typeName(schema.anyOf[0]!);
  }
  if (schema.format === "numeric") return "integer";
  return Array.isArray(schema.type) ? schema.type[0] : schema.type;
}

/**
 * A whole number (digits in a path or query, with or without a minus sign) past a parameter's
 * bounds: which bound it broke. `-1` is a whole number below the first bound, not "not an integer".
 */
function outOfBounds(schema: SchemaLike, value: unknown): string | null {
  if (schema.minimum === undefined || schema.maximum === undefined || !schema.errorMessage) return null;
  const n = typeof value === "string" && /^-?[0-9]+$/.test(value) ? Number(value) : value;
  if (typeof n !== "number" || !Number.isInteger(n)) return null;
  if (n < schema.minimum) return `must be at least ${schema.minimum}`;
  if (n > schema.maximum) return `must be at most ${schema.maximum}`;
  return null;
}

/** The JSON type of a value as a schema names it. */
const jsonType = (value: unknown) =>
  Array.isArray(value) ? "array" : value === null ? "null" : typeof value === "number" ? (Number.isInteger(value) ? "integer" : "number") : typeof value;

/**
 * The member of a union of types (`to`: a number or a list of them) that a value of its type
 * meant: the value is judged by that one ("abc" for `to` is not an E.164 number, not "not an
 * array"). Not the text form of a numeric parameter: "abc" for a page is "not an integer".
 */
function memberOfItsType(schema: SchemaLike, value: unknown): SchemaLike | undefined {
  const t = jsonType(value);
  return schema.anyOf?.find((s) => s.format !== "numeric" && (s.type === t || (t === "integer" && s.type === "number")));
}

/** A sentence fragment a person can read, e.g. "must be at most 100". */
export function describeIssue({ value, schema, message }: Issue): string {
  if (!schema) return message ?? "is invalid";
  if (value === undefined) return "is required";
  const bound = outOfBounds(schema, value);
  if (bound) return bound;
  if (schema.errorMessage) return schema.errorMessage;
  const options = schema.anyOf?.map((s) => s.const).filter((c) => c !== undefined) ?? [];
  if (options.length > 0 && options.length === schema.anyOf?.length) return `must be one of: ${options.join(", ")}`;
  const member = memberOfItsType(schema, value);
  if (member) return describeIssue({ path: "", value, schema: member, message });
  const kinds = [...new Set(schema.anyOf?.filter((s) => s.type !== "null" && s.format !== "numeric").map((s) => String(s.type)) ?? [])];
  if (kinds.length > 1) return `must be ${kinds.map(article).join(" or ")}`;
  const base = schema.anyOf?.find((s) => s.type !== "null" && s.format !== "numeric" && s.type !== "string") ?? schema.anyOf?.[0] ?? schema;
  const merged = { ...base, ...schema, type: typeName(schema) };
  const t = merged.type;
  if (t === "integer" && !(typeof value === "number" && Number.isInteger(value))) return "must be an integer";
  if (t === "number" && typeof value !== "number") return "must be a number";
  if (t === "boolean" && typeof value !== "boolean") return "must be true or false";
  if (t === "string" && typeof value !== "string") return "must be a string";
  if (t === "array" && !Array.isArray(value)) return "must be an array";
  if (t === "object" && (typeof value !== "object" || value === null || Array.isArray(value))) return "must be an object";
  if (t === "object" && merged.maxProperties !== undefined && Object.keys(value as object).length > merged.maxProperties)
    return `must have at most ${merged.maxProperties} entries`;
  if (typeof value === "number") {
    if (merged.minimum !== undefined && value < merged.minimum) return `must be at least ${merged.minimum}`;
    if (merged.maximum !== undefined && value > merged.maximum) return `must be at most ${merged.maximum}`;
  }
  if (typeof value === "string") {
    if (!value.isWellFormed()) return "must be valid Unicode text (it holds a lone surrogate)";
    const length = characterCount(value);
    if (merged.minLength !== undefined && length < merged.minLength)
      return merged.minLength === 1 ? "must not be empty" : `must be at least ${merged.minLength} characters`;
    if (merged.maxLength !== undefined && length > merged.maxLength) return `must be at most ${merged.maxLength} characters`;
    if (merged.pattern || merged.format) return merged.description ? `must be ${merged.description}` : "has an invalid format";
  }
  if (Array.isArray(value)) {
    if (merged.minItems !== undefined && value.length < merged.minItems) return `must have at least ${merged.minItems} item${merged.minItems > 1 ? "s" : ""}`;
    if (merged.maxItems !== undefined && value.length > merged.maxItems) return `must have at most ${merged.maxItems} items`;
    if (merged.uniqueItems) return "must not contain duplicates";
  }
  return t ? `must be ${article(t)}` : (message ?? "is invalid");
}

/**
 * An issue whose path runs through a value that is neither an object nor an array (a string
 * sent for a list of objects is read item by item, "abc" as three items) is the container's:
 * `sim_cards` "must be an array".
 */
export function throughScalar(issue: Issue, body: unknown): Issue {
  const segments = issue.path.split("/").slice(1);
  let current = body;
  for (let i = 0; i < segments.length - 1; i++) {
    current = (current as Record<string, unknown>)[segments[i]!];
    if (typeof current !== "object" || current === null) {
      if (current === undefined) return issue;
      const path = `/${segments.slice(0, i + 1).join("/")}`;
      return { path, value: current, message: /^\d+$/.test(segments[i + 1]!) ? "must be an array" : "must be an object" };
    }
  }
  return issue;
}

/**
 * A union reports its failure at its own path (`to`: a number or a list of recipients), which
 * says nothing of which item is wrong. When the value is of one member's type and that member is
 * a list or an object, the member's own issues are reported instead, at their paths (`to.3`,
 * `to.0.vars.name`), each judged the same way again.
 */
export function intoUnionMember(issue: Issue): Issue[] {
  const member = issue.schema ? memberOfItsType(issue.schema, issue.value) : undefined;
  if (!member || (member.type !== "array" && member.type !== "object")) return [issue];
  let inner: Issue[];
  try {
    inner = [...Value.Errors(member as never, issue.value)].map((e) => ({
      path: `${issue.path}${e.path}`,
      value: e.value,
      schema: e.schema as SchemaLike,
      message: e.message,
    }));
  } catch {
    // A schema TypeBox cannot judge alone (a format only Elysia knows): the union's own issue, as before.
    return [issue];
  }
  return inner.length > 0 ? inner.flatMap(intoUnionMember) : [issue];
}

/** `/sim_cards/0/signal_strength` → `sim_cards.0.signal_strength` */
export const dottedPath = (path: string) => path.replace(/^\//, "").replaceAll("/", ".") || "body";

/** Groups issues by field, one readable sentence each, in the `errors` shape of API.md §1. */
export function fieldErrors(issues: Issue[]): Record<string, string[]> {
  const errors: Record<string, string[]> = {};
  for (const issue of issues) {
    const field = dottedPath(issue.path);
    const text = describeIssue(issue);
    const list = (errors[field] ??= []);
    if (!list.includes(text)) list.push(text);
  }
  // A parent reported beside its own children adds nothing.
  for (const field of Object.keys(errors)) {
    if (Object.keys(errors).some((other) => other !== field && other.startsWith(`${field}.`))) delete errors[field];
  }
  return errors;
}
