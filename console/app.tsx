import { useEffect, useRef, useState } from "preact/hooks";
import { api, fetchIdentity, type Identity } from "./api";
import { type Session, SessionContext } from "./context";
import { AccountPage } from "./pages/account";
import { ApiKeysPage } from "./pages/api-keys";
import { DevicesPage } from "./pages/devices";
import { InboxPage } from "./pages/inbox";
import { NumbersPage } from "./pages/numbers";
import { PlanPage } from "./pages/plan";
import { SignIn } from "./pages/sign-in";
import { TeamsPage } from "./pages/teams";
import { WebhooksPage } from "./pages/webhooks";
import { disconnect, onConnectionState } from "./realtime";
import { chooseOrganization, forget, onSessionChange, organizationId, token } from "./session";
import { ErrorBox, Link, navigate, usePath } from "./ui";

const PAGES = [
  { path: "/numbers", title: "Numbers", view: NumbersPage },
  { path: "/inbox", title: "Inbox", view: InboxPage },
  { path: "/devices", title: "Devices", view: DevicesPage },
  { path: "/webhooks", title: "Webhooks", view: WebhooksPage },
  { path: "/api-keys", title: "API keys", view: ApiKeysPage },
  { path: "/teams", title: "Teams", view: TeamsPage },
  { path: "/plan", title: "Plan usage", view: PlanPage },
  { path: "/account", title: "Account", view: AccountPage },
];

// Asked for while the page renders its first frame, when the tab is signed in already.
let early: Promise<Identity> | null = token() ? fetchIdentity() : null;
early?.catch(() => {});

export function App() {
  const [signedIn, setSignedIn] = useState(token() !== null);
  const [notice, setNotice] = useState<string | undefined>();
  useEffect(
    () =>
      onSessionChange(() => {
        const now = token() !== null;
        setSignedIn((was) => {
          if (was && !now) {
            disconnect();
            setNotice("You were signed out.");
          }
          return now;
        });
      }),
    [],
  );
  return signedIn ? <Shell /> : <SignIn notice={notice} />;
}

function Shell() {
  const [identity, setIdentity] = useState<Identity | null>(null);
  const [error, setError] = useState<unknown>(null);
  const [orgId, setOrgId] = useState(organizationId());
  const [tick, setTick] = useState(0);
  const path = usePath();

  useEffect(() => {
    const pending = early ?? fetchIdentity();
    early = null;
    pending
      .then((me) => {
        setIdentity(me);
        const chosen = organizationId();
        if (!chosen || !me.organizations.some((o) => o.id === chosen)) {
          chooseOrganization(me.current_organization_id);
          setOrgId(me.current_organization_id);
        }
      })
      .catch(setError);
  }, [tick]);
  useEffect(() => onSessionChange(() => setOrgId(organizationId())), []);
  // The chosen organization was left (session.ts leaveOrganization): who the user is now, and their current one.
  useEffect(() => {
    if (identity && orgId === null) setTick((t) => t + 1);
  }, [orgId]);
  useEffect(() => {
    if (path === "/") navigate("/inbox");
  }, [path]);
  // After a client-side navigation, screen readers and keyboards start at the new page's heading.
  const first = useRef(true);
  useEffect(() => {
    if (first.current) {
      first.current = false;
      return;
    }
    document.querySelector<HTMLElement>("main h1")?.focus();
  }, [path]);

  // Signing out stays possible whatever went wrong (a user in no organization any more gets 403 on everything but it).
  if (error)
    return (
      <main id="main">
        <ErrorBox error={error} />
        <SignOut />
      </main>
    );
  if (!identity || !orgId) return <p role="status">Loading…</p>;
  const org = identity.organizations.find((o) => o.id === orgId) ?? identity.organizations[0]!;
  const session: Session = {
    identity,
    orgId: org.id,
    role: org.role,
    reload: () => setTick((t) => t + 1),
    setUser: (user) => setIdentity((me) => (me ? { ...me, user } : me)),
  };
  const page = PAGES.find((p) => path === p.path || path.startsWith(`${p.path}/`)) ?? PAGES[1]!;
  const View = page.view;
  if (typeof document !== "undefined") document.title = `${page.title} · simhost`;

  return (
    <SessionContext.Provider value={session}>
      <a class="skip" href="#main">
        Skip to content
      </a>
      <header class="top">
        <strong class="brand">simhost</strong>
        <OrgSwitcher identity={identity} orgId={org.id} />
        <LiveState />
        <span class="who">
          {identity.user.email} ({org.role ?? "no role"})
        </span>
        <SignOut />
      </header>
      <nav aria-label="Console">
        <ul>
          {PAGES.map((p) => (
            <li key={p.path}>
              <Link href={p.path} current={p === page}>
                {p.title}
              </Link>
            </li>
          ))}
        </ul>
      </nav>
      <main id="main" key={`${org.id}`}>
        <h1 tabIndex={-1}>{page.title}</h1>
        <View />
      </main>
    </SessionContext.Provider>
  );
}

function OrgSwitcher({ identity, orgId }: { identity: Identity; orgId: number }) {
  if (identity.organizations.length < 2) return <span class="org">{identity.organizations[0]?.name}</span>;
  return (
    <label class="org">
      <span class="visually-hidden">Organization</span>
      <select value={String(orgId)} onChange={(e) => chooseOrganization(Number((e.target as HTMLSelectElement).value))}>
        {identity.organizations.map((o) => (
          <option key={o.id} value={String(o.id)}>
            {o.name}
          </option>
        ))}
      </select>
    </label>
  );
}

function LiveState() {
  const [state, setState] = useState("initialized");
  useEffect(() => onConnectionState(setState), []);
  const live = state === "connected";
  return (
    <span class={live ? "live on" : "live"} role="status" aria-live="polite">
      {live ? "Live" : state === "initialized" ? "" : state === "disconnected" || state === "failed" ? "Disconnected" : "Reconnecting…"}
    </span>
  );
}

function SignOut() {
  return (
    <button
      type="button"
      onClick={async () => {
        // Server side first: the token stops working at once on every instance (docs/architecture.md "Revocation").
        await api.POST("/api/auth/logout").catch(() => {});
        forget();
      }}
    >
      Sign out
    </button>
  );
}
