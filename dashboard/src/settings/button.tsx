// The top bar's Settings button and its dialog, for those who may manage the project.

import type { JSX } from "preact";
import { useState } from "preact/hooks";
import { useQuery } from "../context";
import { canManage } from "./rights";
import { SettingsDialog } from "./settings";

/** `onChanged`: the project list is to be read again (time zone changed, project deleted). */
export function SettingsButton(props: { onChanged: () => void }): JSX.Element | null {
  const { api, project, readOnly } = useQuery();
  const [open, setOpen] = useState(false);
  if (!canManage(api, project, readOnly)) return null;
  return (
    <>
      <button type="button" class="ghost" onClick={() => setOpen(true)}>
        Settings
      </button>
      {open && <SettingsDialog onClose={() => setOpen(false)} onChanged={props.onChanged} />}
    </>
  );
}
