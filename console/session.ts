/**
 * Where the console keeps its credential: the API's session token in sessionStorage (this tab
 * only, gone when the tab closes), never in a cookie or localStorage. Signing out in one tab
 * signs out every tab of the console on this browser (BroadcastChannel), see docs/console.md.
 */
const TOKEN = "simhost.token";
const ORG = "simhost.org";
const channel = typeof BroadcastChannel === "undefined" ? null : new BroadcastChannel("simhost-console");
const listeners = new Set<() => void>();

export function token(): string | null {
  return sessionStorage.getItem(TOKEN);
}

export function saveToken(value: string) {
  sessionStorage.setItem(TOKEN, value);
  notify();
}

/** The organization the console acts and reads in (X-Organization-Id), null before one is chosen. */
export function organizationId(): number | null {
  const v = sessionStorage.getItem(ORG);
  return v ? Number(v) : null;
}

export function chooseOrganization(id: number) {
  sessionStorage.setItem(ORG, String(id));
  notify();
}

/** Forgets the chosen organization (the user left it): the console goes back to their current one. */
export function leaveOrganization() {
  sessionStorage.removeItem(ORG);
  notify();
}

/** Forgets the credential here and tells the other tabs to forget theirs. */
export function forget(broadcast = true) {
  sessionStorage.removeItem(TOKEN);
  sessionStorage.removeItem(ORG);
  if (broadcast) channel?.postMessage("signed-out");
  notify();
}

channel?.addEventListener("message", (e) => {
  if (e.data !== "signed-out") return;
  // This tab's own session (a tab signed in by itself has one) ends on the server too: forgotten
  // here only, it would stay valid with no browser holding it.
  const mine = token();
  if (mine) void fetch("/api/auth/logout", { method: "POST", headers: { authorization: `Bearer ${mine}` }, keepalive: true }).catch(() => {});
  forget(false);
});

export function onSessionChange(fn: () => void): () => void {
  listeners.add(fn);
  return () => listeners.delete(fn);
}

function notify() {
  for (const fn of listeners) fn();
}
