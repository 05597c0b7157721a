import { createHash } from "node:crypto";

/** The sign-in and consent page of GET/POST /oauth/authorize: plain HTML and CSS, no script. */

const escapeHtml = (s: string) => s.replaceAll("&", "&amp;").replaceAll("<", "&lt;").replaceAll(">", "&gt;").replaceAll('"', "&quot;").replaceAll("'", "&#39;");

/** Text already escaped, safe to place in the page. */
type Html = { html: string };
const raw = (html: string): Html => ({ html });

function h(strings: TemplateStringsArray, ...values: Array<string | number | Html | Html[] | null | undefined | false>): Html {
  let out = strings[0]!;
  values.forEach((v, i) => {
    if (Array.isArray(v)) out += v.map((x) => x.html).join("");
    else if (v && typeof v === "object") out += v.html;
    else if (v !== null && v !== undefined && v !== false) out += escapeHtml(String(v));
    out += strings[i + 1];
  });
  return raw(out);
}

const STYLE = `
:root{color-scheme:light dark;--bg:#f4f5f7;--card:#fff;--text:#1c2430;--muted:#5b6675;--border:#c9d0d9;
--accent:#1f5fd1;--accent-text:#fff;--danger:#b3261e;--focus:#f2a900}
@media (prefers-color-scheme:dark){:root{--bg:#11151b;--card:#1b2129;--text:#e8edf3;--muted:#a3adba;--border:#3a4452;
--accent:#6ea0ff;--accent-text:#0b1220;--danger:#ff8a80}}
*{box-sizing:border-box}
body{margin:0;min-height:100vh;display:grid;place-items:center;background:var(--bg);color:var(--text);
font:16px/1.5 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;padding:1.5rem}
main{width:100%;max-width:24rem;background:var(--card);border:1px solid var(--border);border-radius:12px;
padding:2rem;box-shadow:0 8px 24px rgb(0 0 0 / .08)}
.brand{font-weight:700;letter-spacing:.02em;color:var(--muted);margin:0 0 .25rem;font-size:.875rem;text-transform:uppercase}
h1{font-size:1.375rem;margin:0 0 1rem;line-height:1.3}
p{margin:0 0 1rem}
.muted{color:var(--muted);font-size:.9375rem}
label{display:block;font-weight:600;margin:0 0 .25rem}
.field{margin:0 0 1rem}
input[type=email],input[type=password],input[type=text]{width:100%;padding:.625rem .75rem;font:inherit;color:inherit;
background:transparent;border:1px solid var(--border);border-radius:8px}
input[aria-invalid=true]{border-color:var(--danger)}
.field-error{color:var(--danger);font-size:.875rem;margin:.25rem 0 0}
.alert{border:1px solid var(--danger);color:var(--danger);border-radius:8px;padding:.625rem .75rem;margin:0 0 1rem}
button{width:100%;padding:.7rem 1rem;font:inherit;font-weight:600;border-radius:8px;cursor:pointer;
border:1px solid var(--accent);background:var(--accent);color:var(--accent-text)}
button.secondary{background:transparent;color:var(--text);border-color:var(--border)}
.actions{display:grid;gap:.625rem;margin-top:1.25rem}
:focus-visible{outline:3px solid var(--focus);outline-offset:2px}
ul{margin:0 0 1rem;padding-left:1.25rem}
`;

/** For the Content-Security-Policy: this one stylesheet is allowed, nothing else inline. */
export const STYLE_HASH = `'sha256-${createHash("sha256").update(STYLE).digest("base64")}'`;

function layout(title: string, body: Html): string {
  return `<!doctype html>${
    h`<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1">
<meta name="referrer" content="no-referrer"><title>${title} · simhost</title><style>${raw(STYLE)}</style></head>
<body><main>${raw('<p class="brand">simhost</p>')}${body}</main></body></html>`.html
  }`;
}

export type FormContext = { clientName: string; request: string; csrf: string };

const hidden = (name: string, value: string) => h`<input type="hidden" name="${name}" value="${value}">`;
const hiddenFields = (c: FormContext, step: string, extra: Html[] = []) => [
  hidden("step", step),
  hidden("request", c.request),
  hidden("csrf", c.csrf),
  ...extra,
];
const alert = (message?: string) => (message ? h`<div class="alert" role="alert" id="form-error">${message}</div>` : null);

/** A labelled input whose error, if any, is announced with it (aria-describedby) and takes the focus. */
function field(o: { name: string; label: string; type: string; value?: string; error?: string; help?: string; focus: boolean; attrs: string }): Html {
  const errorId = `${o.name}-error`;
  const describedBy = [o.error ? errorId : "", o.help ?? ""].filter(Boolean).join(" ");
  return h`<div class="field"><label for="${o.name}">${o.label}</label>
<input id="${o.name}" name="${o.name}" type="${o.type}" value="${o.value ?? ""}" required ${raw(o.attrs)}${raw(o.focus ? " autofocus" : "")}${
    o.error ? raw(' aria-invalid="true"') : null
  }${describedBy ? h` aria-describedby="${describedBy}"` : null}>${o.error ? h`<p class="field-error" id="${errorId}">${o.error}</p>` : null}</div>`;
}

export type SignInErrors = { email?: string; password?: string; form?: string };

export function signInPage(c: FormContext, o: { email?: string; errors?: SignInErrors } = {}): string {
  const e = o.errors ?? {};
  const focusPassword = !!e.password || (!e.email && !!o.email);
  return layout(
    // Screen readers announce the title first: say at once that the page came back with an error.
    e.email || e.password || e.form ? "Error: Sign in" : "Sign in",
    h`<h1>Sign in to continue to ${c.clientName}</h1>${alert(e.form)}
<form method="post" action="/oauth/authorize" novalidate>${hiddenFields(c, "sign_in")}
${field({ name: "email", label: "Email", type: "email", value: o.email, error: e.email, focus: !focusPassword, attrs: 'autocomplete="username" spellcheck="false"' })}
${field({ name: "password", label: "Password", type: "password", error: e.password, focus: focusPassword, attrs: 'autocomplete="current-password"' })}
<div class="actions"><button type="submit">Sign in</button></div></form>`,
  );
}

export function totpPage(c: FormContext, o: { ticket: string; error?: string; formError?: string }): string {
  return layout(
    o.error || o.formError ? "Error: Two-factor authentication" : "Two-factor authentication",
    h`<h1>Enter your authentication code</h1>${alert(o.formError)}
<p class="muted" id="code-help">Open your authenticator app and enter the 6-digit code for simhost.</p>
<form method="post" action="/oauth/authorize" novalidate>${hiddenFields(c, "totp", [hidden("ticket", o.ticket)])}
${field({
  name: "code",
  label: "Authentication code",
  type: "text",
  error: o.error,
  help: "code-help",
  focus: true,
  attrs: 'inputmode="numeric" autocomplete="one-time-code" pattern="[0-9 ]*" maxlength="8"',
})}
<div class="actions"><button type="submit">Verify</button></div></form>`,
  );
}

export function consentPage(c: FormContext, o: { ticket: string; userName: string; userEmail: string }): string {
  return layout(
    "Allow access",
    h`<h1>Allow ${c.clientName} to use your account?</h1>
<p>You are signed in as <strong>${o.userName}</strong> (${o.userEmail}).</p>
<p class="muted">If you allow it, ${c.clientName} can act as you in simhost:</p>
<ul class="muted"><li>read your numbers and messages</li><li>use everything your organizations let you do</li></ul>
<form method="post" action="/oauth/authorize">${hiddenFields(c, "consent", [hidden("ticket", o.ticket)])}
<div class="actions"><button type="submit" name="decision" value="approve" autofocus>Allow</button>
<button type="submit" name="decision" value="deny" class="secondary">Deny</button></div></form>`,
  );
}

/** Shown when the request cannot go back to the client (unknown client or redirect URI, broken form). */
export function errorPage(title: string, message: string): string {
  return layout(
    title,
    h`<h1>${title}</h1><div class="alert" role="alert">${message}</div>
<p class="muted">Close this window and start again from the application.</p>`,
  );
}
