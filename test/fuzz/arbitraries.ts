import fc from "fast-check";

/** The parts of JSON Schema (as Elysia writes it into /openapi.json) the fuzzer reads. */
export type JsonSchema = {
  type?: string | string[];
  anyOf?: JsonSchema[];
  oneOf?: JsonSchema[];
  const?: unknown;
  enum?: unknown[];
  properties?: Record<string, JsonSchema>;
  required?: string[];
  items?: JsonSchema;
  minimum?: number;
  maximum?: number;
  minLength?: number;
  maxLength?: number;
  minItems?: number;
  maxItems?: number;
  format?: string;
  pattern?: string;
};

const nasty = fc.constantFrom(
  "",
  " ",
  "\u0000",
  "'; drop table users; --",
  "$" + "{{7*7}}",
  "../../etc/passwd",
  "😀".repeat(50),
  "\u202e",
  "<script>",
  "null",
  "-1",
  "1e309",
  "+1555",
);

/** Ids no route may take (API.md: positive integers), each a 422: fractional, negative, zero, past 2^53 and 2^63, not digits. */
export const HOSTILE_IDS = [
  "1.5",
  "-1",
  "-1.5",
  "0",
  "007",
  "1e3",
  "0x10",
  "%201",
  "9007199254740992",
  "9223372036854775808",
  "18446744073709551616",
  "99999999999999999999999",
  "Infinity",
  "NaN",
  "abc",
];

/** Date-times that are not real instants in 1970..9999, each a 422. */
export const HOSTILE_DATES = [
  "2026-02-30T00:00:00Z",
  "2025-02-29T12:00:00Z",
  "2026-13-01T00:00:00Z",
  "2026-01-01T24:00:00Z",
  "2026-01-01T23:60:00Z",
  "0000-01-01T00:00:00Z",
  "-001000-01-01T00:00:00Z",
  "+275760-09-13T00:00:00Z",
  "275760-09-13T00:00:00.000Z",
  "1969-12-31T23:59:59Z",
  "2026-01-01T00:00:00",
  "2026-01-01",
];

/** Values near and just past a schema's bounds, plus arbitrary junk of every type. */
export function valueFor(schema: JsonSchema | undefined, depth = 0): fc.Arbitrary<unknown> {
  const junk = fc.oneof(fc.string(), fc.integer(), fc.double(), fc.boolean(), fc.constant(null), fc.constant([]), fc.constant({}));
  if (!schema || depth > 4) return junk;
  const options = schema.anyOf ?? schema.oneOf;
  if (options) return fc.oneof(...options.map((s) => valueFor(s, depth + 1)), junk);
  if (schema.const !== undefined) return fc.oneof({ weight: 4, arbitrary: fc.constant(schema.const) }, { weight: 1, arbitrary: junk });
  if (schema.enum) return fc.oneof({ weight: 4, arbitrary: fc.constantFrom(...schema.enum) }, { weight: 1, arbitrary: nasty });
  const type = Array.isArray(schema.type) ? schema.type[0] : schema.type;
  const typed = typedValue(schema, type, depth);
  return fc.oneof({ weight: 5, arbitrary: typed }, { weight: 1, arbitrary: junk });
}

function typedValue(schema: JsonSchema, type: string | undefined, depth: number): fc.Arbitrary<unknown> {
  switch (type) {
    case "integer":
    case "number": {
      const min = schema.minimum ?? -1000;
      const max = schema.maximum ?? 1_000_000;
      return fc.oneof(
        fc.integer({ min: Math.ceil(min), max: Math.floor(Math.max(min, max)) }),
        fc.constantFrom(min - 1, min, max, max + 1, 0, -1, 2 ** 31, 2 ** 53, 2 ** 63, 2 ** 64, 1.5, -1.5, 1e308),
      );
    }
    case "boolean":
      return fc.oneof(fc.boolean(), fc.constantFrom("true", 1));
    case "string": {
      const max = schema.maxLength ?? 40;
      if (schema.format === "date-time")
        return fc.oneof(
          fc.constantFrom(...HOSTILE_DATES),
          fc.date({ noInvalidDate: true }).map((d) => d.toISOString()),
        );
      return fc.oneof(
        fc.string({ maxLength: Math.min(max, 60) }),
        fc.string({ unit: "grapheme", maxLength: 30 }),
        fc.constant("x".repeat(max + 1)),
        fc.constant("y".repeat(Math.min(max, 100_000))),
        fc.constantFrom(
          "+15551234567",
          "+4915112345678",
          "2026-11-21T10:00:00.000Z",
          "550e8400-e29b-41d4-a716-446655440000",
          "http://127.0.0.1/x",
          "a@b.co",
          "0123456789abcdef",
        ),
        nasty,
      );
    }
    case "array": {
      const item = valueFor(schema.items, depth + 1);
      return fc.oneof(
        fc.array(item, { maxLength: Math.min(schema.maxItems ?? 5, 5) }),
        fc.array(item, { minLength: (schema.maxItems ?? 20) + 1, maxLength: (schema.maxItems ?? 20) + 1 }),
      );
    }
    case "object":
      return objectValue(schema, depth);
    default:
      return fc.oneof(fc.string(), fc.integer(), fc.constant(null));
  }
}

function objectValue(schema: JsonSchema, depth: number): fc.Arbitrary<unknown> {
  const props = schema.properties ?? {};
  const keys = Object.keys(props);
  if (keys.length === 0) return fc.dictionary(fc.string({ maxLength: 8 }), fc.string({ maxLength: 8 }), { maxKeys: 3 });
  const record: Record<string, fc.Arbitrary<unknown>> = {};
  for (const key of keys) record[key] = valueFor(props[key], depth + 1);
  // Any subset of keys may be missing, required or not: missing fields are half the bugs.
  return fc.record(record, { requiredKeys: [] });
}

/** A raw body: JSON of a schema-shaped value most of the time, otherwise bytes that are not JSON. */
export function bodyFor(schema: JsonSchema | undefined): fc.Arbitrary<string | undefined> {
  return fc.oneof(
    { weight: 8, arbitrary: valueFor(schema ?? { type: "object" }).map((v) => JSON.stringify(v)) },
    { weight: 1, arbitrary: fc.constantFrom(undefined, "", "{", "[1,2", "not json", '{"a":}', "\u0000\u0001", "null", "1", '"s"') },
  );
}

export function pathParamFor(): fc.Arbitrary<string> {
  return fc.oneof(fc.integer({ min: 1, max: 1_000 }).map(String), fc.constantFrom("999999999999", "%00", "%27", "null", "SIM-AAAA", ...HOSTILE_IDS));
}
