// The respondent page on a shared device (docs/fieldwork.md): a tablet passed from respondent
// to respondent, `?device=shared` or a survey's "device": "shared". respond.js imports this
// module only then. Each submission is a new respondent with a fresh key (deniable.js's
// answerShared); after it only the thanks, the counts and the button for the next are shown.
export { answerShared } from "./deniable.js";

/** What a shared device shows besides the form: its note and the typed invitation field; not
 * the browser's ledger, which no respondent of a shared device spends. */
export function showSharedMode(form) {
  const note = document.querySelector("[data-shared-note]");
  if (note) note.hidden = false;
  const spent = document.getElementById("spent")?.closest("p");
  if (spent) spent.hidden = true;
  const invitation = form.querySelector("[data-invitation]");
  if (invitation) invitation.hidden = false;
}

/** After one respondent's submit: only the thanks, the counts and the button for the next. */
export function showThanks(form) {
  form.reset();
  form.hidden = true;
  document.getElementById("receipt").hidden = true;
  const thanks = document.querySelector("[data-thanks]");
  thanks.hidden = false;
  thanks.querySelector("[data-next]")?.focus();
}

/** A fresh form for the next respondent (`prepare` draws its arms and shows its questions). */
export function nextRespondent(form, prepare) {
  form.reset();
  prepare();
  document.querySelector("[data-thanks]").hidden = true;
  form.hidden = false;
  form.querySelector("button[type=submit]").disabled = false;
  window.scrollTo(0, 0);
  form.querySelector("input:not([type=hidden]):not(:disabled)")?.focus();
}
