import { useState } from "preact/hooks";
import { ApiError, api, ok } from "../api";
import { saveToken } from "../session";
import { ErrorBox, Field, useAction } from "../ui";

const WRONG_CODE =
  "That code did not work. Enter the code your app shows now; after 5 wrong codes, or 5 minutes, this sign-in ends: start over with your password.";

/** Email and password, then the authenticator code when the account has two-factor on. */
export function SignIn({ notice }: { notice?: string }) {
  const [email, setEmail] = useState("");
  const [password, setPassword] = useState("");
  const [code, setCode] = useState("");
  const [pending, setPending] = useState<string | null>(null);
  const { error, busy, run, setError } = useAction();

  const signIn = (e: Event) => {
    e.preventDefault();
    run(async () => {
      const answer = await ok(api.POST("/api/auth/login", { body: { email, password } }));
      if ("token" in answer) saveToken(answer.token);
      else setPending(answer.tmp_token);
    });
  };
  const verify = (e: Event) => {
    e.preventDefault();
    run(async () => {
      const answer = await ok(api.POST("/api/auth/2fa/verify", { body: { tmp_token: pending!, code: code.trim() } })).catch((err: unknown) => {
        // The API's 401 names its tmp_token; here that is this sign-in, which ends after 5 wrong codes or 5 minutes.
        if (err instanceof ApiError && err.status === 401) throw new ApiError(WRONG_CODE, 401);
        throw err;
      });
      saveToken(answer.token);
    });
  };
  /** Back to email and password: a sign-in whose code step was used up or timed out is over. */
  const startOver = () => {
    setPending(null);
    setCode("");
    setPassword("");
    setError(null);
  };

  return (
    <main class="sign-in" id="main">
      <h1>Sign in to simhost</h1>
      {notice && <p role="status">{notice}</p>}
      {pending === null ? (
        <form onSubmit={signIn}>
          <Field label="Email" name="email" type="email" autoComplete="username" required value={email} onInput={setEmail} />
          <Field label="Password" name="password" type="password" autoComplete="current-password" required value={password} onInput={setPassword} />
          <ErrorBox error={error} />
          <button type="submit" disabled={busy}>
            Sign in
          </button>
        </form>
      ) : (
        <form onSubmit={verify}>
          <p>Two-factor authentication is on for this account.</p>
          <Field
            label="Authenticator code"
            name="code"
            inputMode="numeric"
            autoComplete="one-time-code"
            required
            value={code}
            onInput={setCode}
            hint="The 6-digit code your authenticator app shows now."
          />
          <ErrorBox error={error} />
          <button type="submit" disabled={busy}>
            Verify
          </button>{" "}
          <button type="button" onClick={startOver}>
            Start over
          </button>
        </form>
      )}
      <p class="hint">
        No account yet? The first start of the server prints the first owner's credentials; operators add users with <code>simhost admin user create</code>.
      </p>
    </main>
  );
}
