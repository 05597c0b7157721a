import { useState } from "preact/hooks";
import { api, ok } from "../api";
import { useSession } from "../context";
import { forget } from "../session";
import { Empty, ErrorBox, Field, useAction, useLoad, When } from "../ui";

/** The signed-in user: password, session and OAuth tokens, two-factor authentication (QR code drawn in the browser). */
export function AccountPage() {
  const { identity } = useSession();
  const u = identity.user;
  // Bumped after a password change, which signs the other sessions out: the list loads again.
  const [sessionsKey, setSessionsKey] = useState(0);
  return (
    <section>
      <div class="card">
        <h2>Profile</h2>
        <p>
          {u.name} · {u.email}
        </p>
        <p class="meta">
          Member since <When at={u.created_at} />. Organizations: {identity.organizations.map((o) => `${o.name} (${o.role ?? "no role"})`).join(", ")}.
        </p>
      </div>
      <ChangePassword onChanged={() => setSessionsKey((k) => k + 1)} />
      <Sessions reloadKey={sessionsKey} />
      <TwoFactor />
    </section>
  );
}

function TwoFactor() {
  const { identity, setUser } = useSession();
  const enabled = identity.user.two_factor_enabled;
  const [setup, setSetup] = useState<{ secret: string; qr: string } | null>(null);
  const [code, setCode] = useState("");
  const { error, busy, run } = useAction();

  const start = () =>
    run(async () => {
      const { secret, otpauth_url } = await ok(api.POST("/api/auth/2fa/setup"));
      // Loaded on demand: the QR code library is not part of the first page.
      const QRCode = await import("qrcode");
      setSetup({ secret, qr: await QRCode.toDataURL(otpauth_url, { margin: 1, width: 220 }) });
    });
  const confirmCode = (e: Event) => {
    e.preventDefault();
    run(async () => {
      const body = { code: code.trim() };
      const { data } = await ok(enabled ? api.POST("/api/auth/2fa/disable", { body }) : api.POST("/api/auth/2fa/enable", { body }));
      // The answer carries the user; GET /api/v2/me may lag it by the credential cache's seconds.
      setUser(data);
      setSetup(null);
      setCode("");
    });
  };

  return (
    <div class="card">
      <h2>Two-factor authentication</h2>
      <p>{enabled ? "On: signing in asks for a code from your authenticator app." : "Off: signing in needs only your password."}</p>
      {!enabled && !setup && (
        <button type="button" disabled={busy} onClick={start}>
          Set up two-factor authentication
        </button>
      )}
      {setup && (
        <>
          <p>Scan this code with your authenticator app, or type the key below into it.</p>
          <img src={setup.qr} width={220} height={220} alt="QR code of your two-factor key (the same key is written below)" />
          <p class="secret mono" data-testid="totp-secret">
            {setup.secret}
          </p>
        </>
      )}
      {(enabled || setup) && (
        <form onSubmit={confirmCode}>
          <Field
            label={enabled ? "Code to turn two-factor off" : "Code from your authenticator app"}
            name="totp"
            inputMode="numeric"
            autoComplete="one-time-code"
            required
            value={code}
            onInput={setCode}
          />
          <button type="submit" disabled={busy}>
            {enabled ? "Turn off two-factor" : "Turn on two-factor"}
          </button>
        </form>
      )}
      <ErrorBox error={error} />
    </div>
  );
}

function ChangePassword({ onChanged }: { onChanged: () => void }) {
  const [current, setCurrent] = useState("");
  const [next, setNext] = useState("");
  const [done, setDone] = useState<string | null>(null);
  const { error, busy, run } = useAction();
  const submit = (e: Event) => {
    e.preventDefault();
    setDone(null);
    run(async () => {
      const { signed_out } = await ok(api.POST("/api/auth/password", { body: { current_password: current, new_password: next } }));
      setCurrent("");
      setNext("");
      onChanged();
      setDone(`Password changed. ${signed_out === 1 ? "1 other session was" : `${signed_out} other sessions were`} signed out; this one stays signed in.`);
    });
  };
  return (
    <div class="card">
      <h2>Change password</h2>
      <form onSubmit={submit}>
        <Field label="Current password" name="current-password" type="password" autoComplete="current-password" required value={current} onInput={setCurrent} />
        <Field
          label="New password"
          name="new-password"
          type="password"
          autoComplete="new-password"
          required
          value={next}
          onInput={setNext}
          hint="At least 8 characters. Every other session of yours is signed out."
        />
        <button type="submit" disabled={busy}>
          Change password
        </button>
      </form>
      {done && (
        <p role="status" class="ok">
          {done}
        </p>
      )}
      <ErrorBox error={error} />
    </div>
  );
}

/** Session and OAuth tokens of the user; signing one out ends it on every server instance before the answer. */
function Sessions({ reloadKey }: { reloadKey: number }) {
  const { data, error, reload } = useLoad(() => ok(api.GET("/api/auth/sessions")).then((r) => r.data), [reloadKey]);
  const action = useAction();
  const signOut = (id: number, current: boolean) =>
    action.run(async () => {
      await ok(api.DELETE("/api/auth/sessions/{session}", { params: { path: { session: id } } }));
      if (current) forget();
      else reload();
    });
  const others = data?.filter((s) => !s.current).length ?? 0;
  return (
    <div class="card">
      <h2>Active sessions</h2>
      <ErrorBox error={error ?? action.error} />
      {data && (
        <>
          <ul class="rows" aria-label="Active sessions">
            {data.map((s) => (
              <li key={s.id} class="row">
                <span>
                  <strong>{s.kind === "oauth" ? "OAuth app" : "Session"}</strong> {s.current && <span class="badge">this browser</span>}
                  <br />
                  <span class="meta">
                    Signed in <When at={s.created_at} />, last used <When at={s.last_used_at} />, expires <When at={s.expires_at} />
                  </span>
                </span>
                <button type="button" disabled={action.busy} onClick={() => signOut(s.id, s.current)}>
                  {s.current ? "Sign out" : "Sign out session"}
                  <span class="visually-hidden"> {s.id}</span>
                </button>
              </li>
            ))}
          </ul>
          {others === 0 ? (
            <Empty>No other sessions: only this browser is signed in.</Empty>
          ) : (
            <button
              type="button"
              disabled={action.busy}
              onClick={() =>
                action.run(async () => {
                  await ok(api.POST("/api/auth/sessions/revoke-others"));
                  reload();
                })
              }
            >
              Sign out all other sessions ({others})
            </button>
          )}
        </>
      )}
    </div>
  );
}
