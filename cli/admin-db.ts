import { type AdminEnv, withAdmin } from "../server/admin/database";
import { type Admin, AdminError } from "../server/admin/operations";
import { CliError } from "./output";

/**
 * Runs `fn` with the server's admin operations (server/admin/) on the database of API.md §4
 * (DATABASE_URL, else the embedded one under DATA_DIR). The CLI carries no SQL of its own; an
 * operator's error from the operations exits 1 with its message.
 */
export async function withAdminOps<T>(fn: (admin: Admin) => Promise<T>, env: AdminEnv = process.env): Promise<T> {
  try {
    return await withAdmin(fn, env);
  } catch (e) {
    if (e instanceof AdminError) throw new CliError(e.message);
    throw e;
  }
}
