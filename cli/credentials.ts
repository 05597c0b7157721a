import { chmodSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { homedir } from "node:os";
import { dirname, join } from "node:path";

export type SavedCredential = { token: string; email: string; expires_at: string | null; saved_at: string };

/** Per-user file, keyed by server URL: %APPDATA% on Windows, else XDG_CONFIG_HOME or ~/.config. */
export function credentialsPath(env: Record<string, string | undefined> = process.env): string {
  const base = process.platform === "win32" ? (env.APPDATA ?? join(homedir(), "AppData", "Roaming")) : env.XDG_CONFIG_HOME || join(homedir(), ".config");
  return join(base, "simhost", "credentials.json");
}

const normalize = (url: string) => url.replace(/\/+$/, "");

function readAll(path: string): Record<string, SavedCredential> {
  try {
    const parsed = JSON.parse(readFileSync(path, "utf8"));
    return parsed && typeof parsed === "object" ? parsed : {};
  } catch {
    return {};
  }
}

export function loadCredential(url: string, path = credentialsPath()): SavedCredential | undefined {
  return readAll(path)[normalize(url)];
}

/** Writes the file readable by its owner only (0600), the folder 0700. */
export function saveCredential(url: string, credential: SavedCredential | undefined, path = credentialsPath()): void {
  const all = readAll(path);
  if (credential) all[normalize(url)] = credential;
  else delete all[normalize(url)];
  mkdirSync(dirname(path), { recursive: true, mode: 0o700 });
  writeFileSync(path, `${JSON.stringify(all, null, 2)}\n`, { mode: 0o600 });
  chmodSync(path, 0o600);
}
