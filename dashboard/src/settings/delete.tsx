// Deleting a project (DELETE /projects/{id}): its keys, share links, saved reports and every
// event of it, for good. The name is typed to confirm.

import type { JSX } from "preact";
import { useState } from "preact/hooks";
import { useQuery } from "../context";
import { setView } from "../state";
import { Field } from "../ui";
import { errorText } from "./forms";

export function DeleteProject(props: { path: string; name: string; onDeleted: () => void }): JSX.Element {
  const { api } = useQuery();
  const [typed, setTyped] = useState("");
  const [error, setError] = useState("");
  const [busy, setBusy] = useState(false);
  const remove = async () => {
    setBusy(true);
    setError("");
    try {
      await api.send("DELETE", props.path);
      setView({ project: "" });
      props.onDeleted();
    } catch (e) {
      setError(errorText(e));
      setBusy(false);
    }
  };
  return (
    <form
      class="stack settings-form"
      onSubmit={(e) => {
        e.preventDefault();
        if (typed === props.name) void remove();
      }}
    >
      <p>
        <strong>Deleting the project deletes every event of it, its keys and share links, for good.</strong>{" "}
        Nothing sent with its keys is received any more. Export what you want to keep first.
      </p>
      <Field label={`Type the project's name, ${props.name}, to confirm`}>
        {(id) => (
          <input
            id={id}
            autocomplete="off"
            spellcheck={false}
            value={typed}
            onInput={(e) => setTyped((e.target as HTMLInputElement).value)}
          />
        )}
      </Field>
      {error && (
        <p class="note error" role="alert">
          {error}
        </p>
      )}
      <div class="row-actions">
        <button type="submit" class="danger" disabled={busy || typed !== props.name}>
          Delete this project
        </button>
      </div>
    </form>
  );
}
