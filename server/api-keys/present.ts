import { PERMISSIONS, type Permission } from "../auth/caller";
import type { ApiKeyRow } from "./store";

export const presentApiKey = (k: ApiKeyRow) => ({
  id: k.id,
  name: k.name,
  key_prefix: k.key_prefix,
  permissions: k.permissions,
  last_used_at: k.last_used_at ? k.last_used_at.toISOString() : null,
  created_at: k.created_at.toISOString(),
  updated_at: k.updated_at.toISOString(),
});

/** Permissions are kept in the enum's order, whatever order the client sent. */
export const canonicalPermissions = (permissions: string[]): Permission[] => PERMISSIONS.filter((p) => permissions.includes(p));
