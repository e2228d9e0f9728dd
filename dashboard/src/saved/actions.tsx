/** The Edit and Delete controls of one row of a saved list (goals, funnels, segments, notes). */
import { ConfirmAction } from "../accounts";

/**
 * "Edit" and a "Delete" that asks first. `what` names the row for assistive technology
 * ("goal Signups": the buttons read "Edit goal Signups", "Delete goal Signups"); `question`
 * is the confirming question shown in the row.
 */
export function EditDelete(props: {
  what: string;
  question: string;
  onEdit: () => void;
  onDelete: () => void | Promise<void>;
}) {
  return (
    <>
      <button type="button" class="link small" aria-label={`Edit ${props.what}`} onClick={props.onEdit}>
        Edit
      </button>
      <ConfirmAction
        label="Delete"
        name={`Delete ${props.what}`}
        question={props.question}
        confirm="Delete"
        onConfirm={props.onDelete}
      />
    </>
  );
}
