import { describe, expect, test } from "bun:test";
import { addedRoutes, breakingChanges, type Document } from "../../.ci/openapi-compat";

const json = (schema: unknown) => ({ content: { "application/json": { schema } } });
/** A small v1 document: GET /items lists, POST /items creates. */
function base(): any {
  return {
    paths: {
      "/items": {
        get: {
          parameters: [{ name: "page", in: "query", required: false, schema: { type: "integer", minimum: 1 } }],
          responses: {
            200: json({
              type: "object",
              required: ["data"],
              properties: {
                data: {
                  type: "array",
                  items: { type: "object", properties: { id: { type: "integer" }, name: { type: "string" }, status: { type: "string", enum: ["a", "b"] } } },
                },
              },
            }),
          },
        },
        post: {
          requestBody: json({
            type: "object",
            required: ["name"],
            properties: { name: { type: "string", maxLength: 255 }, kind: { type: "string", enum: ["x", "y"] }, size: { type: "integer" } },
          }),
          responses: { 201: json({ type: "object", properties: { id: { type: "integer" } } }) },
        },
      },
      "/other": { get: { responses: { 200: json({ type: "object" }) } } },
    },
  };
}

const kinds = (after: Document) => breakingChanges(base(), after).map((c) => c.kind);

describe("breaking-change guard", () => {
  test("identical documents: nothing", () => {
    expect(breakingChanges(base(), base())).toEqual([]);
  });

  test("a removed route", () => {
    const d = base();
    delete d.paths["/other"];
    expect(kinds(d)).toEqual(["removed-route"]);
  });

  test("a removed response field, nested in an array", () => {
    const d = base();
    delete d.paths["/items"].get.responses[200].content["application/json"].schema.properties.data.items.properties.name;
    expect(breakingChanges(base(), d)).toEqual([{ kind: "removed-response-field", where: "GET /items 200.data[].name", detail: "removed" }]);
  });

  test("a new required request field, and a new required query parameter", () => {
    const d = base();
    d.paths["/items"].post.requestBody.content["application/json"].schema.required = ["name", "size"];
    d.paths["/items"].get.parameters.push({ name: "team", in: "query", required: true, schema: { type: "integer" } });
    expect(kinds(d).sort()).toEqual(["new-required-request-field", "new-required-request-field"]);
  });

  test("narrowed request types, enums and bounds", () => {
    const d = base();
    const props = d.paths["/items"].post.requestBody.content["application/json"].schema.properties;
    props.size = { type: "string" };
    props.kind.enum = ["x"];
    props.name.maxLength = 100;
    expect(kinds(d).sort()).toEqual(["narrowed-request-bound", "narrowed-request-enum", "narrowed-request-type"]);
  });

  test("a changed success status code", () => {
    const d = base();
    d.paths["/items"].post.responses = { 200: d.paths["/items"].post.responses[201] };
    expect(kinds(d)).toEqual(["changed-status"]);
  });

  test("a response enum that gains a value, and a response field that changes type", () => {
    const d = base();
    const item = d.paths["/items"].get.responses[200].content["application/json"].schema.properties.data.items.properties;
    item.status.enum = ["a", "b", "c"];
    item.id = { type: "string" };
    expect(kinds(d).sort()).toEqual(["changed-response-type", "widened-response-enum"]);
  });

  test("additive changes pass: new route, new optional field, new response field, wider request bounds, nullable ids", () => {
    const d = base();
    d.paths["/new"] = { get: { responses: { 200: json({ type: "object" }) } } };
    const body = d.paths["/items"].post.requestBody.content["application/json"].schema;
    body.properties.note = { type: "string" };
    body.properties.name.maxLength = 1000;
    body.properties.kind.enum = ["x", "y", "z"];
    d.paths["/items"].get.responses[200].content["application/json"].schema.properties.meta = { type: "object" };
    d.paths["/items"].get.parameters.push({ name: "q", in: "query", required: false, schema: { type: "string" } });
    d.paths["/items"].post.responses[201].content["application/json"].schema.properties.id = { anyOf: [{ type: "integer" }] };
    expect(breakingChanges(base(), d)).toEqual([]);
    expect(addedRoutes(base(), d)).toEqual(["GET /new"]);
  });
});
