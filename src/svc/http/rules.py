"""THE table of which right each route needs (:data:`RULES`), beside the table of what each
role may do (:data:`svc.accounts.roles.ROLE_RIGHTS`).

Every route of the app has one line here: ``"METHOD /path/{param}": rule``. A rule is a right
(``ingest``, ``read``, ``edit``, ``manage``, ``members``, ``owner``), checked on the project
of the route (``{project_id}``, or the ``projectId`` parameter) or on its team
(``{team_id}``; for ``POST /projects``, the team the project is created in); or one of:

- ``public``: no credential (a token in the path or body may be the credential);
- ``admin``: the admin token only;
- ``any``: any credential; the answer depends on it (``GET /projects`` lists what it reaches);
- ``account``: any account's session (its own settings).

Handlers enforce it (``principal.require(right, project_id)``, ``require_team``); the test
``tests/accounts/test_roles_table.py`` sends every route with every role and checks the
answer against this table, and fails for a route without a line. Adding a route: add its
line here (one line), and call ``require`` in its handler.
"""

from __future__ import annotations

PUBLIC, ADMIN, ANY, ACCOUNT = "public", "admin", "any", "account"

RULES: dict[str, str] = {
    # events and reads
    "POST /analytics": "ingest",
    "OPTIONS /analytics": PUBLIC,
    "GET /metrics": "read",
    "OPTIONS /metrics": PUBLIC,
    "GET /metrics/timeseries": "read",
    "GET /metrics/breakdown": "read",
    "GET /metrics/realtime": "read",
    "GET /metrics/goals": "read",
    "GET /metrics/values": "read",
    "GET /metrics/funnel": "read",
    "GET /metrics/journeys": "read",
    "GET /metrics/revenue": "read",
    "GET /metrics/errors": "read",
    "GET /metrics/properties": "read",
    "GET /metrics/vitals": "read",
    "GET /export": "read",
    "GET /overview": ANY,  # the projects the credential may read (a key: its own)
    "GET /overview/timeseries": ANY,
    # operations
    "GET /health": PUBLIC,
    "GET /internal/metrics": PUBLIC,  # its own token (SVC_INTERNAL_METRICS_TOKEN)
    "POST /internal/backup": ADMIN,
    "GET /internal/backup": ADMIN,
    "POST /internal/lake": ADMIN,
    "GET /internal/nodes": ADMIN,
    "DELETE /internal/nodes/{node}": ADMIN,
    # projects and keys
    "POST /projects": "manage",  # on the team it is created in
    "GET /projects": ANY,
    "GET /projects/{project_id}": "manage",
    "PATCH /projects/{project_id}": "manage",
    "DELETE /projects/{project_id}": "owner",
    "GET /projects/{project_id}/keys": "manage",
    "POST /projects/{project_id}/keys": "manage",
    "DELETE /projects/{project_id}/keys/{key_id}": "manage",
    "POST /projects/{project_id}/keys/{key_id}/rotate": "manage",
    "POST /projects/{project_id}/edge-secrets": "manage",
    "GET /projects/{project_id}/edge-secrets": "manage",
    "DELETE /projects/{project_id}/edge-secrets/{secret_id}": "manage",
    "GET /projects/{project_id}/dropped": "manage",  # its samples show what options exclude
    "POST /projects/{project_id}/transfer": "owner",  # and owner of the receiving team
    "GET /projects/{project_id}/guests": "members",
    "POST /projects/{project_id}/guests": "members",
    "DELETE /projects/{project_id}/guests/{account_id}": "members",
    "DELETE /projects/{project_id}/guests/invitations/{invitation_id}": "members",
    # email reports and alerts (svc.http.mail)
    "GET /projects/{project_id}/subscriptions": "read",  # keys: edit; a reader sees its own
    "POST /projects/{project_id}/subscriptions": "edit",  # a reader: its own address (read)
    "DELETE /projects/{project_id}/subscriptions/{subscription_id}": "edit",  # likewise
    "GET /unsubscribe/{token}": PUBLIC,  # the token in the path is the credential
    "POST /unsubscribe/{token}": PUBLIC,
    "GET /internal/mail": ADMIN,
    # saved goals, funnels, segments and annotations (svc.http.saved)
    "GET /projects/{project_id}/goals": "read",
    "POST /projects/{project_id}/goals": "edit",
    "PATCH /projects/{project_id}/goals/{goal_id}": "edit",
    "DELETE /projects/{project_id}/goals/{goal_id}": "edit",
    "GET /projects/{project_id}/funnels": "read",
    "POST /projects/{project_id}/funnels": "edit",
    "PATCH /projects/{project_id}/funnels/{funnel_id}": "edit",
    "DELETE /projects/{project_id}/funnels/{funnel_id}": "edit",
    "GET /projects/{project_id}/segments": "read",  # the shared ones and one's own
    "POST /projects/{project_id}/segments": "read",  # a personal one (accounts); shared: edit
    "PATCH /projects/{project_id}/segments/{segment_id}": "edit",  # one's own personal: read
    "DELETE /projects/{project_id}/segments/{segment_id}": "edit",  # one's own personal: read
    "GET /projects/{project_id}/annotations": "read",
    "POST /projects/{project_id}/annotations": "edit",
    "PATCH /projects/{project_id}/annotations/{annotation_id}": "edit",
    "DELETE /projects/{project_id}/annotations/{annotation_id}": "edit",
    # accounts and teams
    "POST /auth/signin": PUBLIC,
    "POST /auth/signout": ACCOUNT,
    "POST /auth/signout-everywhere": ACCOUNT,
    "POST /auth/reset": PUBLIC,
    "POST /auth/reset/confirm": PUBLIC,
    "GET /auth/methods": PUBLIC,  # password sign-in on or off, single sign-on's label
    "POST /auth/oidc/start": PUBLIC,
    "GET /auth/oidc/callback": PUBLIC,  # the provider's code and state are the credential
    "POST /auth/oidc/finish": PUBLIC,
    "GET /account": ACCOUNT,
    "PATCH /account": ACCOUNT,
    "POST /account/totp": ACCOUNT,
    "POST /account/totp/confirm": ACCOUNT,
    "DELETE /account/totp": ACCOUNT,
    "GET /accounts": ADMIN,
    "POST /accounts": ADMIN,  # svcm users create (--owner: with a team it owns)
    "PATCH /accounts/{account_id}": ADMIN,  # disable, enable
    "GET /invitations/{token}": PUBLIC,
    "POST /invitations/{token}/accept": PUBLIC,
    "GET /teams": ANY,
    "POST /teams": ANY,  # an account (it owns the new team) or the admin token
    "GET /teams/{team_id}": "read",
    "PATCH /teams/{team_id}": "manage",
    "PATCH /teams/{team_id}/members/{account_id}": "members",  # making an owner: owner
    "DELETE /teams/{team_id}/members/{account_id}": "members",  # or oneself (leave)
    "GET /teams/{team_id}/invitations": "members",
    "POST /teams/{team_id}/invitations": "members",  # inviting an owner: owner
    "DELETE /teams/{team_id}/invitations/{invitation_id}": "members",
    # the dashboard, the script and the API's description
    "GET /svc/js": PUBLIC,
    "GET /svc/js/{extensions}": PUBLIC,
    "GET /openapi.json": PUBLIC,
    "GET /": PUBLIC,
    "GET /dashboard": PUBLIC,
    "GET /dashboard/assets/{path:path}": PUBLIC,
    "GET /share/{token}": PUBLIC,
}


def rule_of(method: str, path: str) -> str | None:
    """The rule of a route (its template, as Starlette holds it), or None when it has none.
    HEAD has the rule of GET."""
    rule = RULES.get(f"{method} {path}")
    if rule is None and method == "HEAD":
        rule = RULES.get(f"GET {path}")
    return rule
