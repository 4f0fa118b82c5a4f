// The respondent page on a shared device (docs/fieldwork.md): a tablet passed from respondent
// to respondent, `?device=shared` or a survey's "device": "shared". respond.js imports this
// module only then. Each submission is a new respondent with a fresh key (answerShared); after
// it only the thanks, the counts and the button for the next are shown.
import {
  drawArms,
  enrollment,
  isLongitudinal,
  newKeyPair,
  putEntry,
  randomizeAll,
  routeOf,
  send,
  sendEnrollment,
  signedReport,
  t,
} from "./deniable.js";

/** Answer for one respondent of a shared device: a fresh key, never stored; the entry is kept
 * only until the aggregator has the report, and no epsilon is charged. An invitation code
 * refused sends nothing; one not checkable now waits with the report. The entry after a try. */
export async function answerShared(
  server,
  survey,
  hash,
  truth,
  { invitation = null, asked = null, arms = null } = {},
) {
  arms = arms || drawArms(survey); // a fresh draw per respondent
  if (survey.questions.some(isLongitudinal)) {
    // A memo on a shared device would mix everyone's permanent answers (memo.js).
    throw new Error("a survey asked in waves cannot be answered on a shared device");
  }
  if (survey.enrollment === "invite" && !invitation) {
    throw new Error(
      t("This survey is by invitation only: type the respondent's invitation code. Nothing was sent."),
    );
  }
  const key = await newKeyPair();
  let enrolled = invitation ? await enrollment(survey, hash, key, invitation) : null;
  if (enrolled) {
    const refused = await sendEnrollment(server, { enrollment: enrolled });
    if (refused?.outcome === "rejected") {
      const reason = refused.reason.replace(/^enrollment: /, "");
      throw new Error(t("{reason}. Nothing was sent.", { reason }));
    }
    if (!refused) enrolled = null;
  }
  const noisy = randomizeAll(survey, truth, asked, arms);
  const report = await signedReport(survey, hash, noisy, key, { arms });
  const entry = {
    server: new URL(server).origin,
    survey: survey.id,
    report_id: report.report_id,
    shared: true,
    ...routeOf(survey),
    report,
    status: "queued",
    stored_at: new Date().toISOString(),
    retry_at: Date.now() + 60_000, // being sent now: no retry round sends it meanwhile
    firm: true,
  };
  if (enrolled) entry.enrollment = enrolled;
  await putEntry(entry);
  return send(server, entry);
}

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
