import { Type } from "@sinclair/typebox";
import { t } from "elysia";
import { Text } from "../lib/fields";

const DateTime = t.String({ format: "date-time" });

export const User = t.Object({
  id: Type.Integer(),
  name: t.String(),
  email: t.String(),
  email_verified_at: t.Union([DateTime, t.Null()]),
  two_factor_enabled: t.Boolean(),
  created_at: DateTime,
  updated_at: DateTime,
});

export const Organization = t.Object({ id: Type.Integer(), name: t.String(), created_at: DateTime, updated_at: DateTime });

const TotpCode = Type.String({ pattern: "^[0-9]{6}$", description: "a 6-digit code", examples: ["123456"] });

/**
 * An email address a user signs in with, on the API and the sign-in page alike: ASCII, on which
 * the throttles' keys (lower-cased in JavaScript, auth/limits.ts) and the account's lookup
 * (`lower()` in PostgreSQL) agree. `İ` is `i` to one and `i̇` to the other: an address spelt with
 * it found the account under fresh throttle counters.
 */
export const SignInEmail = Type.String({ format: "email", maxLength: 255, description: "an email address" });

export const LoginBody = Type.Object({
  email: SignInEmail,
  password: Text({ minLength: 1, maxLength: 1024 }),
});

export const VerifyBody = Type.Object({
  tmp_token: Text({ minLength: 1, maxLength: 200 }),
  code: TotpCode,
});

export const CodeBody = Type.Object({ code: TotpCode });

export const TokenResponse = t.Object({ token: t.String(), token_type: t.Literal("Bearer"), expires_at: DateTime, user: User });
export const ChallengeResponse = t.Object({ "2fa_required": t.Literal(true), tmp_token: t.String() });
export const SetupResponse = t.Object({ secret: t.String(), otpauth_url: t.String() });
export const UserData = t.Object({ data: User });

export const MeResponse = t.Object({
  user: t.Union([User, t.Null()]),
  auth_type: t.Union([t.Literal("session"), t.Literal("oauth"), t.Literal("api_key")]),
  organization: Organization,
  api_key: t.Optional(t.Object({ id: Type.Integer(), name: t.String(), permissions: t.Array(t.String()) })),
});

export const PasswordBody = Type.Object({
  current_password: Text({ minLength: 1, maxLength: 1024 }),
  new_password: Text({ minLength: 8, maxLength: 1024, description: "8 to 1024 characters" }),
});

export const SignedOutResponse = t.Object({ signed_out: Type.Integer({ description: "how many other session and OAuth tokens stopped working" }) });

export const Session = t.Object({
  id: Type.Integer(),
  kind: t.Union([t.Literal("session"), t.Literal("oauth")]),
  created_at: DateTime,
  last_used_at: t.Union([DateTime, t.Null()]),
  expires_at: DateTime,
  current: t.Boolean({ description: "the token of this request" }),
});
export const SessionList = t.Object({ data: t.Array(Session) });
