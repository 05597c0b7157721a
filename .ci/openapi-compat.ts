/**
 * Breaking changes between two OpenAPI 3.0 documents of the same API version: a removed route,
 * a removed response field, a changed response type or a widened response enum, a new required
 * request field or parameter, a narrowed request type, enum or bound, a removed success status.
 * Small on purpose: it knows the shapes our generator writes (objects, arrays, anyOf unions).
 */
type Schema = {
  type?: string;
  nullable?: boolean;
  anyOf?: Schema[];
  oneOf?: Schema[];
  enum?: unknown[];
  properties?: Record<string, Schema>;
  required?: string[];
  items?: Schema;
  minimum?: number;
  maximum?: number;
  minLength?: number;
  maxLength?: number;
  minItems?: number;
  maxItems?: number;
  pattern?: string;
  format?: string;
};
type Parameter = { name: string; in: string; required?: boolean; schema?: Schema };
type Operation = {
  parameters?: Parameter[];
  requestBody?: { required?: boolean; content?: Record<string, { schema?: Schema }> };
  responses?: Record<string, { content?: Record<string, { schema?: Schema }> }>;
};
export type Document = { paths?: Record<string, Record<string, Operation>> };
export type Change = { kind: string; where: string; detail: string };

const METHODS = ["get", "post", "put", "patch", "delete"];
const variants = (s: Schema | undefined): Schema[] => (!s ? [] : s.anyOf || s.oneOf ? (s.anyOf ?? s.oneOf ?? []).flatMap(variants) : [s]);
const types = (s: Schema | undefined) => new Set(variants(s).flatMap((v) => [v.type ?? "any", ...(v.nullable ? ["null"] : [])]));
const enumOf = (s: Schema | undefined) => {
  const vs = variants(s);
  return vs.length > 0 && vs.every((v) => v.enum) ? new Set(vs.flatMap((v) => v.enum ?? [])) : null;
};
const propertiesOf = (s: Schema | undefined) => Object.assign({}, ...variants(s).map((v) => v.properties ?? {})) as Record<string, Schema>;
const requiredOf = (s: Schema | undefined) => new Set(variants(s).flatMap((v) => v.required ?? []));
const itemsOf = (s: Schema | undefined) => variants(s).find((v) => v.items)?.items;
const bound = (s: Schema | undefined, key: keyof Schema) =>
  variants(s)
    .map((v) => v[key])
    .find((x) => x !== undefined) as number | string | undefined;
const jsonSchema = (content: Record<string, { schema?: Schema }> | undefined) =>
  content?.["application/json"]?.schema ?? Object.values(content ?? {})[0]?.schema;

/** What a client sends: the new schema may not accept less than the old one did. */
function compareRequest(a: Schema | undefined, b: Schema | undefined, where: string, out: Change[]) {
  if (!a || !b) return;
  const [ta, tb] = [types(a), types(b)];
  if (!tb.has("any") && [...ta].some((t) => t !== "any" && !tb.has(t) && !(t === "integer" && tb.has("number"))))
    out.push({ kind: "narrowed-request-type", where, detail: `${[...ta]} → ${[...tb]}` });
  const [ea, eb] = [enumOf(a), enumOf(b)];
  if (eb && (!ea || [...ea].some((v) => !eb.has(v)))) out.push({ kind: "narrowed-request-enum", where, detail: `${ea ? [...ea] : "any"} → ${[...eb]}` });
  for (const key of ["maximum", "maxLength", "maxItems"] as const) {
    const [x, y] = [bound(a, key), bound(b, key)];
    if (y !== undefined && (x === undefined || (y as number) < (x as number)))
      out.push({ kind: "narrowed-request-bound", where, detail: `${key} ${x ?? "none"} → ${y}` });
  }
  for (const key of ["minimum", "minLength", "minItems"] as const) {
    const [x, y] = [bound(a, key), bound(b, key)];
    if (y !== undefined && (x === undefined || (y as number) > (x as number)))
      out.push({ kind: "narrowed-request-bound", where, detail: `${key} ${x ?? "none"} → ${y}` });
  }
  const [pa, pb] = [bound(a, "pattern"), bound(b, "pattern")];
  if (pb !== undefined && pb !== pa) out.push({ kind: "narrowed-request-pattern", where, detail: `${pa ?? "none"} → ${pb}` });
  const [ra, rb] = [requiredOf(a), requiredOf(b)];
  for (const name of rb) if (!ra.has(name)) out.push({ kind: "new-required-request-field", where: `${where}.${name}`, detail: "now required" });
  const [propsA, propsB] = [propertiesOf(a), propertiesOf(b)];
  for (const [name, sa] of Object.entries(propsA)) compareRequest(sa, propsB[name], `${where}.${name}`, out);
  compareRequest(itemsOf(a), itemsOf(b), `${where}[]`, out);
}

/** What a client reads: every field it could rely on stays, with the same type and values. */
function compareResponse(a: Schema | undefined, b: Schema | undefined, where: string, out: Change[]) {
  if (!a || !b) return;
  const [ta, tb] = [types(a), types(b)];
  if (!ta.has("any") && [...tb].some((t) => t !== "any" && !ta.has(t) && !(t === "integer" && ta.has("number"))))
    out.push({ kind: "changed-response-type", where, detail: `${[...ta]} → ${[...tb]}` });
  const [ea, eb] = [enumOf(a), enumOf(b)];
  if (ea && (!eb || [...eb].some((v) => !ea.has(v)))) out.push({ kind: "widened-response-enum", where, detail: `${[...ea]} → ${eb ? [...eb] : "any"}` });
  const [propsA, propsB] = [propertiesOf(a), propertiesOf(b)];
  for (const [name, sa] of Object.entries(propsA)) {
    if (!(name in propsB)) out.push({ kind: "removed-response-field", where: `${where}.${name}`, detail: "removed" });
    else compareResponse(sa, propsB[name], `${where}.${name}`, out);
  }
  compareResponse(itemsOf(a), itemsOf(b), `${where}[]`, out);
}

function compareOperation(a: Operation, b: Operation, where: string, out: Change[]) {
  const oldParams = new Map((a.parameters ?? []).map((p) => [`${p.in}:${p.name}`, p]));
  for (const p of b.parameters ?? []) {
    const before = oldParams.get(`${p.in}:${p.name}`);
    if (p.required && !before?.required) out.push({ kind: "new-required-request-field", where: `${where} ${p.in} ${p.name}`, detail: "now required" });
    if (before) compareRequest(before.schema, p.schema, `${where} ${p.in} ${p.name}`, out);
  }
  if (b.requestBody?.required && a.requestBody && !a.requestBody.required)
    out.push({ kind: "new-required-request-field", where: `${where} body`, detail: "body now required" });
  compareRequest(jsonSchema(a.requestBody?.content), jsonSchema(b.requestBody?.content), `${where} body`, out);
  for (const [status, response] of Object.entries(a.responses ?? {})) {
    if (!status.startsWith("2")) continue;
    const next = b.responses?.[status];
    if (!next) {
      out.push({
        kind: "changed-status",
        where,
        detail: `${status} no longer answered (now ${
          Object.keys(b.responses ?? {})
            .filter((s) => s.startsWith("2"))
            .join(", ") || "none"
        })`,
      });
      continue;
    }
    compareResponse(jsonSchema(response.content), jsonSchema(next.content), `${where} ${status}`, out);
  }
}

export function breakingChanges(before: Document, after: Document): Change[] {
  const out: Change[] = [];
  for (const [path, item] of Object.entries(before.paths ?? {})) {
    for (const method of METHODS) {
      const op = item[method];
      if (!op) continue;
      const next = after.paths?.[path]?.[method];
      const where = `${method.toUpperCase()} ${path}`;
      if (!next) out.push({ kind: "removed-route", where, detail: "removed" });
      else compareOperation(op, next, where, out);
    }
  }
  return out;
}

/** Routes the newer document adds: not breaking, but the snapshot should learn them. */
export function addedRoutes(before: Document, after: Document): string[] {
  const added: string[] = [];
  for (const [path, item] of Object.entries(after.paths ?? {}))
    for (const method of METHODS) if (item[method] && !before.paths?.[path]?.[method]) added.push(`${method.toUpperCase()} ${path}`);
  return added;
}
