// What the credential in use may do to a project's settings (the table of docs/api.md,
// "Accounts and teams"; the server checks every request again).

import type { Api } from "../api";
import { may } from "../accounts";
import type { Project } from "../types";

/** The project's settings, keys, share links and dropped events: the admin token, the project's
 * secret key, an owner or admin of its team. */
export function canManage(api: Api, project: Project, readOnly: boolean): boolean {
  if (readOnly) return false;
  if (api.kind === "admin" || api.kind === "secret") return true;
  return api.kind === "session" && may(project.role, "manage");
}

/** Deleting the project: the admin token or an owner of its team (not a secret key). */
export function canDelete(api: Api, project: Project): boolean {
  return api.kind === "admin" || (api.kind === "session" && may(project.role, "owner"));
}

/** A project's retention and quota are the operator's: the admin token only. */
export function canSetRetention(api: Api): boolean {
  return api.kind === "admin";
}
