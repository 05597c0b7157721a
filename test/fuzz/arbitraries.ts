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
        fc.constantFrom(min - 1, min, max, max + 1, 0, -1, 2 ** 31, 2 ** 53, 1.5),
      );
    }
    case "boolean":
      return fc.oneof(fc.boolean(), fc.constantFrom("true", 1));
    case "string": {
      const max = schema.maxLength ?? 40;
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
  return fc.oneof(
    fc.integer({ min: 1, max: 1_000 }).map(String),
    fc.constantFrom("0", "-1", "999999999999", "99999999999999999999999", "1.5", "abc", "%00", "%27", "null", "1e3", "SIM-AAAA"),
  );
}
