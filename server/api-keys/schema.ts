import { Type } from "@sinclair/typebox";
import { t } from "elysia";
import { PERMISSIONS } from "../auth/caller";
import { IdParam, Optional, Text } from "../lib/fields";

const DateTime = t.String({ format: "date-time" });

// A pattern rather than a union of literals: Elysia splits a string sent in place of an array of
// literal unions into characters ("" would pass as []), while a plain string item stays strict.
const Permission = Type.String({
  pattern: `^(${PERMISSIONS.map((p) => p.replace(".", "\\.")).join("|")})$`,
  enum: [...PERMISSIONS],
  description: `one of ${PERMISSIONS.join(", ")}`,
});
const Permissions = Type.Array(Permission, { uniqueItems: true, maxItems: PERMISSIONS.length });
const Name = Text({ minLength: 1, maxLength: 255 });

export const CreateApiKeyBody = Type.Object({ name: Name, permissions: Permissions });
export const UpdateApiKeyBody = Type.Object({ name: Optional(Name, "absent"), permissions: Optional(Permissions, "absent") });

export const ApiKeyParams = t.Object({ api_key: IdParam() });

export const ApiKey = t.Object({
  id: Type.Integer(),
  name: t.String(),
  key_prefix: t.String({ description: "the first 12 characters of the key" }),
  permissions: t.Array(t.String()),
  last_used_at: t.Union([DateTime, t.Null()]),
  created_at: DateTime,
  updated_at: DateTime,
});

export const ApiKeyList = t.Object({ data: t.Array(ApiKey) });
export const ApiKeyData = t.Object({ data: ApiKey });
export const ApiKeyWithSecret = t.Object({
  api_key: ApiKey,
  plain_text_key: t.String({ description: "the full key; shown only now" }),
});
