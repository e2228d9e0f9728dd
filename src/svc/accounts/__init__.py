"""Accounts: people with passwords and two-factor codes, teams that own projects, roles,
guests, sessions, invitations and password resets (issue 21); single sign-on (issue 42).

Modules, one job each: :mod:`.passwords` (argon2id), :mod:`.tokens` (random tokens stored
hashed), :mod:`.roles` (the table of what each role may do), :mod:`.totp` (two-factor codes and
recovery codes), :mod:`.store` (accounts and sessions), :mod:`.teams` (teams, members, which
team owns a project, guests), :mod:`.invites` (invitations and password resets),
:mod:`.access` (a session token to what its account may do), :mod:`.throttle` (sign-in
attempts), :mod:`.mail` (the one call into the mail outbox), :mod:`.service` (the domain
operations the HTTP handlers and ``svcm`` call); single sign-on: :mod:`.oidc` (the OpenID
Connect client), :mod:`.sso_store` (sign-ins under way, linked identities) and :mod:`.sso`
(who signs in as whom).
"""
