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

/** A sentence fragment a person can read, e.g. "must be at most 100". */
export function describeIssue({ value, schema, message }: Issue): string {
  if (!schema) return message ?? "is invalid";
  if (schema.errorMessage) return schema.errorMessage;
  if (value === undefined) return "is required";
  const options = schema.anyOf?.map((s) => s.const).filter((c) => c !== undefined) ?? [];
  if (options.length > 0 && options.length === schema.anyOf?.length) return `must be one of: ${options.join(", ")}`;
  const base = schema.anyOf?.find((s) => s.type !== "null" && s.format !== "numeric" && s.type !== "string") ?? schema.anyOf?.[0] ?? schema;
  const merged = { ...base, ...schema, type: typeName(schema) };
  const t = merged.type;
  if (t === "integer" && !(typeof value === "number" && Number.isInteger(value))) return "must be an integer";
  if (t === "number" && typeof value !== "number") return "must be a number";
  if (t === "boolean" && typeof value !== "boolean") return "must be true or false";
  if (t === "string" && typeof value !== "string") return "must be a string";
  if (t === "array" && !Array.isArray(value)) return "must be an array";
  if (t === "object" && (typeof value !== "object" || value === null || Array.isArray(value))) return "must be an object";
  if (typeof value === "number") {
    if (merged.minimum !== undefined && value < merged.minimum) return `must be at least ${merged.minimum}`;
    if (merged.maximum !== undefined && value > merged.maximum) return `must be at most ${merged.maximum}`;
  }
  if (typeof value === "string") {
    if (merged.minLength !== undefined && value.length < merged.minLength)
      return merged.minLength === 1 ? "must not be empty" : `must be at least ${merged.minLength} characters`;
    if (merged.maxLength !== undefined && value.length > merged.maxLength) return `must be at most ${merged.maxLength} characters`;
    if (merged.pattern || merged.format) return merged.description ? `must be ${merged.description}` : "has an invalid format";
  }
  if (Array.isArray(value)) {
    if (merged.minItems !== undefined && value.length < merged.minItems) return `must have at least ${merged.minItems} item${merged.minItems > 1 ? "s" : ""}`;
    if (merged.maxItems !== undefined && value.length > merged.maxItems) return `must have at most ${merged.maxItems} items`;
    if (merged.uniqueItems) return "must not contain duplicates";
  }
  return t ? `must be ${article(t)}` : (message ?? "is invalid");
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
