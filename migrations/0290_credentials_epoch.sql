-- A user's credentials epoch: moved on by a password change and by "sign out everywhere else"
-- (auth/store.ts deleteUserSessions). What proves a sign-in still under way carries the epoch it
-- was proven in (a 2FA challenge, an authorization code, the sign-in page's signed tickets) and
-- is honoured only while it is the user's current one; a session is issued only in the epoch its
-- password or code was checked in. Before, a tmp_token, a code or a consent page obtained with
-- the old password still signed in after the change.
alter table users add column credentials_epoch integer not null default 0;
alter table login_challenges add column credentials_epoch integer not null default 0;
alter table oauth_authorization_codes add column credentials_epoch integer not null default 0;
