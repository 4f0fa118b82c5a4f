// deniable's protocol in the browser, the module the page imports: the same randomization,
// canonical JSON, survey hash, signatures and local ledger as the Python client, on web
// platform APIs only. The true answers never leave the device: only the randomized report is
// stored and sent. It answers a survey and re-exports its parts' API: probability.js, text.js,
// mechanisms.js, canonical.js, signing.js, ledger.js, delivery.js (docs/architecture.md).
import { surveyHash } from "./canonical.js";
import { enroll, problemDetail, routeOf, send } from "./delivery.js";
import { addEntry, epsilonSpent, keyFor, storedEntry } from "./ledger.js";
import { drawArms, inArm, isLongitudinal, randomize } from "./mechanisms.js";
import { signedReport } from "./signing.js";

export * from "./canonical.js";
export * from "./delivery.js";
export * from "./ledger.js";
export * from "./mechanisms.js";
export * from "./probability.js";
export * from "./signing.js";
export * from "./text.js";

// The product's words: the page hands its translator in (respond.js), else English.

let translate = (msgid) => msgid;

/** Use `fn(msgid) -> text` for the messages this module shows a respondent (the page's
 * language, docs/surveys.md); msgids are the English texts with {placeholders}. */
export function setTranslator(fn) {
  translate = typeof fn === "function" ? fn : (msgid) => msgid;
}

/** A message in the page's language, its {placeholders} filled from `args`. */
export function t(msgid, args = {}) {
  return String(translate(msgid)).replace(/\{(\w+)\}/g, (whole, name) =>
    Object.hasOwn(args, name) ? String(args[name]) : whole,
  );
}

/** The aggregator's current survey document {survey, hash}, its hash checked. An error with
 * `unreachable` set when there was no answer (offline), `refused` when the aggregator said no. */
export async function fetchSurvey(server, surveyId) {
  let response;
  try {
    response = await fetch(new URL(`/api/v1/surveys/${encodeURIComponent(surveyId)}`, server));
  } catch {
    throw Object.assign(new Error(t("the aggregator could not be reached")), { unreachable: true });
  }
  if (!response.ok) {
    const refused = response.status >= 400 && response.status < 500;
    throw Object.assign(new Error(await problemDetail(response)), { refused, unreachable: !refused });
  }
  const body = await response.json();
  const computed = await surveyHash(body.survey);
  if (computed !== body.survey_hash) {
    throw new Error(t("the survey does not match its published hash; do not answer it"));
  }
  return { survey: body.survey, hash: body.survey_hash };
}

/** The ids of the questions a report holds: `asked` (the questions the respondent was asked,
 * in the survey's order) or, without it, every question. */
function askedIds(survey, asked) {
  if (asked == null) return survey.questions.map((question) => question.id);
  const wanted = new Set(asked);
  return survey.questions.filter((question) => wanted.has(question.id)).map((q) => q.id);
}

/** The epsilon a report holding the questions `asked` spends: the sum over its randomized
 * questions (a plain question, or one in a direct arm, spends none). Every question when
 * `asked` is not given. */
export function reportEpsilon(survey, asked = null, arms = {}) {
  const ids = new Set(askedIds(survey, asked));
  return survey.questions
    .map((question) => inArm(question, arms))
    .filter((question) => ids.has(question.id) && typeof question.epsilon === "number")
    .reduce((sum, question) => sum + question.epsilon, 0);
}

/** The report's answers: exactly the questions asked, each randomized once. */
export function randomizeAll(survey, truth, asked = null, arms = {}) {
  const answers = {};
  for (const id of askedIds(survey, asked)) {
    if (!Object.hasOwn(truth, id)) throw new Error(`${id}: no answer given`);
    const question = survey.questions.find((q) => q.id === id);
    answers[id] = randomize(inArm(question, arms), truth[id]);
  }
  return answers;
}

/** Answer a survey: randomize the true answers (`truth`: id -> answer) of the questions
 * `asked` (all by default), sign, store, then send; the stored entry, whose `epsilon` is what
 * the report spends. Refuses a second report or passing the cap. Longitudinal questions need
 * `memo` (memo.js: {charge, draw}). One answer at a time per browser (a Web Lock). */
export async function answer(server, survey, hash, truth, options = {}) {
  const locks = globalThis.navigator?.locks;
  const work = () => answerLocked(server, survey, hash, truth, options);
  const stored = await (locks ? locks.request("deniable-answer", work) : work());
  return stored.existing ? stored.entry : send(server, stored.entry);
}

async function answerLocked(
  server,
  survey,
  hash,
  truth,
  { cap = 10, invitation = null, asked = null, arms = null, memo = null } = {},
) {
  const existing = await storedEntry(server, survey.id);
  if (existing) return { entry: existing, existing: true };
  arms = arms || drawArms(survey);
  const ids = askedIds(survey, asked);
  const repeated = ids.filter((id) => isLongitudinal(survey.questions.find((q) => q.id === id)));
  if (repeated.length && !memo) throw new Error(`${repeated[0]}: asked in waves, needs memo.js`);
  const others = ids.filter((id) => !repeated.includes(id));
  const spent = await epsilonSpent();
  const memoCost = repeated.length ? await memo.charge(server, survey, truth, repeated) : 0;
  const cost = reportEpsilon(survey, others, arms) + memoCost;
  if (spent + cost > cap + 1e-9) {
    throw new Error(
      t(
        "Answering would spend epsilon {total}, over this browser's cap of {cap}; nothing was sent.",
        { total: (spent + cost).toFixed(2), cap },
      ),
    );
  }
  if (survey.enrollment === "invite" && !invitation) {
    throw new Error(
      t(
        "This survey is by invitation only: open the link from your invitation (it carries your code). Nothing was sent.",
      ),
    );
  }
  const key = await keyFor(server, survey.id);
  if (invitation) await enroll(server, survey, hash, key, invitation);
  const noisy = randomizeAll(survey, truth, others, arms);
  // The memo is drawn last, once nothing can refuse the report: what it keeps is charged here.
  const drawn = repeated.length ? await memo.draw(server, survey, truth, repeated) : null;
  if (drawn) Object.assign(noisy, drawn.answers);
  const ordered = Object.fromEntries(ids.map((id) => [id, noisy[id]]));
  const report = await signedReport(survey, hash, ordered, key, { arms });
  const entry = {
    server: new URL(server).origin,
    ...routeOf(survey),
    report,
    epsilon: drawn ? reportEpsilon(survey, others, arms) + drawn.epsilon : cost,
    status: "queued",
    stored_at: new Date().toISOString(),
    retry_at: Date.now() + 60_000, // being sent now: no retry round sends it meanwhile
    firm: true,
  };
  return { entry: await addEntry(server, survey.id, entry), existing: false };
}
