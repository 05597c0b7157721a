import { useState } from "preact/hooks";
import { api, ok } from "../api";
import { useSession } from "../context";
import { forget } from "../session";
import { ErrorBox, Field, useAction, When } from "../ui";

/** The signed-in user: two-factor authentication (QR code drawn in the browser) and this session. */
export function AccountPage() {
  const { identity } = useSession();
  const u = identity.user;
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
      <TwoFactor />
      <div class="card">
        <h2>Password and sessions</h2>
        <p>
          The API offers no password change or session list yet; signing out here ends this session on the server at once. An operator can reset a password with{" "}
          <code>simhost admin user create --email … --password …</code>.
        </p>
        <button
          type="button"
          onClick={async () => {
            await api.POST("/api/auth/logout").catch(() => {});
            forget();
          }}
        >
          Sign out of this session
        </button>
      </div>
    </section>
  );
}

function TwoFactor() {
  const { identity } = useSession();
  // The enable/disable answers carry the user; GET /api/me may lag them by the credential cache's seconds.
  const [enabled, setEnabled] = useState(identity.user.two_factor_enabled);
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
      setEnabled(data.two_factor_enabled);
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
