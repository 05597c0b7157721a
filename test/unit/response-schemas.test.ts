import { describe, expect, test } from "bun:test";
import { Type } from "@sinclair/typebox";
import { Value } from "@sinclair/typebox/value";
import { toAppError } from "../../server/app";
import { characterCount, Text } from "../../server/lib/fields";
import { createResponseCheck, type OpenApiDocument } from "../response-schemas";

const doc: OpenApiDocument = {
  paths: {
    "/api/things/{id}": {
      get: {
        responses: {
          200: {
            content: {
              "application/json": {
                schema: {
                  type: "object",
                  required: ["id", "battery_level"],
                  properties: { id: { type: "integer" }, battery_level: { type: "integer", nullable: true }, phone_number: { nullable: true, enum: [null] } },
                },
              },
            },
          },
        },
      },
      delete: { responses: { 200: { description: "Success" } } },
    },
  },
  components: { schemas: { Error: { type: "object", required: ["message", "code"], properties: { message: { type: "string" }, code: { type: "string" } } } } },
};

describe("the response-schema check of the test helpers", () => {
  const check = createResponseCheck(doc);
  const json = "application/json";

  test("a conforming answer passes; nullable fields may be null", () => {
    expect(check("GET", "/api/things/1", 200, json, JSON.stringify({ id: 1, battery_level: null, phone_number: null }))).toBeNull();
    expect(check("GET", "/api/v1/things/1?x=1", 200, json, JSON.stringify({ id: 1, battery_level: 5 }))).toBeNull();
  });

  test("a null where the document types a value, a missing field, a wrong type: mismatches", () => {
    expect(check("GET", "/api/things/1", 200, json, JSON.stringify({ id: null, battery_level: 1 }))).toContain("/id");
    expect(check("GET", "/api/things/1", 200, json, JSON.stringify({ id: 1 }))).toContain("battery_level");
    expect(check("GET", "/api/things/1", 200, json, JSON.stringify({ id: "1", battery_level: 1 }))).toContain("integer");
  });

  test("errors the route does not list must have the API.md §1 shape; undocumented successes are mismatches", () => {
    expect(check("GET", "/api/things/1", 404, json, JSON.stringify({ message: "Not found.", code: "not_found" }))).toBeNull();
    expect(check("GET", "/api/things/1", 404, json, JSON.stringify({ error: "nope" }))).toContain("error shape");
    expect(check("GET", "/api/things/1", 201, json, "{}")).toContain("status not in the document");
    expect(check("DELETE", "/api/things/1", 204, null, "")).toBeNull();
  });
});

describe("Elysia's own response validation", () => {
  test("an answer that fails its route's response schema is our bug: 500 internal_error, never 422", () => {
    const error = Object.assign(new Error("Invalid response"), { type: "response", all: [{ path: "/id", value: "x" }] });
    expect(toAppError("VALIDATION", error).status).toBe(500);
    const body = Object.assign(new Error("Invalid body"), { type: "body", all: [{ path: "/id", value: "x" }] });
    expect(toAppError("VALIDATION", body).status).toBe(422);
  });
});

describe("Text: lengths in code points", () => {
  test("emoji, CJK and combining marks count one per code point; lone surrogates are refused", () => {
    expect(characterCount("😀")).toBe(1);
    expect(characterCount("e\u0301")).toBe(2);
    expect(characterCount("漢字")).toBe(2);
    const Body = Type.Object({ text: Text({ minLength: 1, maxLength: 1600 }) });
    expect(Value.Check(Body, { text: "😀".repeat(1600) })).toBe(true);
    expect(Value.Check(Body, { text: "😀".repeat(1601) })).toBe(false);
    expect(Value.Check(Body, { text: "" })).toBe(false);
    expect(Value.Check(Body, { text: "a\ud800" })).toBe(false);
    expect(Value.Check(Body, { text: 5 })).toBe(false);
  });
});
