// The respondent page (the aggregator's /s/<survey>, or an exported copy hosted anywhere):
// reads the form, answers through deniable.js, shows the receipt, keeps the outbox going.
// Everything that touches a true answer stays in this browser. The page talks to one origin,
// the aggregator's (main's data-aggregator), and randomizes with the survey pinned in the page
// (#pinned-survey): an aggregator publishing another survey under this id is refused. It loads
// conditions.js, memo.js and languages.js only for a survey that needs them (skip logic, waves,
// several languages), before anything else, so that an offline visit has them too.
import {
  DIRECT_NOTICE,
  answer,
  drawArms,
  epsilonSpent,
  inArm,
  isLongitudinal,
  fetchSurvey,
  nextRetry,
  normalizeText,
  outboxCounts,
  questionType,
  reportEpsilon,
  resendQueued,
  setTranslator,
  shownAnswer,
  storedEntry,
  supported,
  surveyHash,
  t,
  useRelay,
} from "./deniable.js";

const main = document.getElementById("main");
const form = document.getElementById("answer");
const statusLine = document.getElementById("status");
const server = new URL(main.dataset.aggregator || window.location.origin).origin;
const surveyId = main.dataset.survey;
const cap = Number(main.dataset.cap);
const shared =
  main.dataset.device === "shared" ||
  new URLSearchParams(window.location.search).get("device") === "shared";

// ---------------------------------------------------------------------------------------
// Languages (docs/surveys.md): the survey's own texts come from its translations
// (languages.js), the product's fixed texts from the catalogs the page carries (#page-messages,
// #page-plurals); every fixed text is written t("English text", {placeholders}) and found by
// its English msgid.

/** The JSON of one of the page's data blocks, or {}. */
function carried(id) {
  try {
    return JSON.parse(document.getElementById(id)?.textContent || "{}");
  } catch {
    return {};
  }
}

/** The product's words of each of the survey's languages: {tag: {msgid: text}}. */
const MESSAGES = carried("page-messages");
/** Their plural forms: {tag: {index: "digits", forms: {msgid: [form, ...]}}}, where digit n of
 * `index` is the form of the number n (the catalog's gettext Plural-Forms). */
const PLURALS = carried("page-plurals");
/** The language the server rendered the page in (its texts are in the page already). */
const rendered = main.dataset.lang || document.documentElement.lang || "en";
let language = rendered;
setTranslator((msgid) => {
  const catalog = Object.hasOwn(MESSAGES, language) ? MESSAGES[language] : null;
  return catalog && Object.hasOwn(catalog, msgid) ? catalog[msgid] : msgid;
});

/** The form of a plural text for `count` in the page's language: the catalog's (a number past
 * its table takes the form of the first number in the table of the same CLDR category). */
function pluralText(msgid, plural, count) {
  const own = Object.hasOwn(PLURALS, language) ? PLURALS[language] : null;
  const forms = own?.forms && Object.hasOwn(own.forms, msgid) ? own.forms[msgid] : null;
  if (!forms) return count === 1 ? msgid : plural;
  const table = own.index;
  let index = Number(table[table.length - 1]);
  if (count < table.length) index = Number(table[count]);
  else {
    const rules = new Intl.PluralRules(language);
    const category = rules.select(count);
    for (let n = 0; n < table.length; n += 1) {
      if (rules.select(n) === category) {
        index = Number(table[n]);
        break;
      }
    }
  }
  return forms[index] ?? forms[forms.length - 1];
}

/** Write a fixed text into `element`: its msgid and arguments are on the element (data-t,
 * data-t-args; a plural text's data-t-plural, its form chosen by the number in the slot
 * data-t-count names); its slots (<output data-slot>) keep their place and their value. */
function translateElement(element) {
  let args = {};
  try {
    args = JSON.parse(element.dataset.tArgs || "{}");
  } catch {
    args = {};
  }
  const slots = {};
  for (const slot of element.querySelectorAll("[data-slot]")) slots[slot.dataset.slot] = slot;
  const keep = Object.fromEntries(
    Object.entries(args).concat(Object.keys(slots).map((name) => [name, `{${name}}`])),
  );
  const { t: msgid, tPlural: plural, tCount: counted } = element.dataset;
  const fill = (words) =>
    words.replace(/\{(\w+)\}/g, (whole, name) => (Object.hasOwn(keep, name) ? String(keep[name]) : whole));
  let english = msgid;
  let text;
  if (plural) {
    const count = Number(slots[counted]?.textContent ?? args[counted]);
    english = count === 1 ? msgid : plural;
    text = fill(pluralText(msgid, plural, count));
  } else {
    text = t(msgid, keep);
  }
  if (Object.keys(slots).some((name) => !text.includes(`{${name}}`))) {
    // A translation that lost a slot would lose its element: the English text keeps it.
    text = fill(english);
  }
  const parts = [];
  let last = 0;
  for (const match of text.matchAll(/\{(\w+)\}/g)) {
    parts.push(text.slice(last, match.index));
    parts.push(Object.hasOwn(slots, match[1]) ? slots[match[1]] : match[0]);
    last = match.index + match[0].length;
  }
  parts.push(text.slice(last));
  element.replaceChildren(...parts);
}

let currentSurvey = null;
let shownEntry = null;
let lastSaid = null;
/** languages.js, for a survey written in several languages (else the page stays in the one
 * language the server rendered it in). */
let languages = null;

/** Show the page's fixed texts in `tag` (languages.js has set <html lang dir> and the survey's
 * own texts): the product's words, the receipt and the status line. Answers already given stay
 * (wire values never change with the language). */
function applyLanguage(survey, tag) {
  language = tag;
  for (const element of document.querySelectorAll("[data-t]")) translateElement(element);
  markdown?.showMarkdown();
  if (shownEntry) showReceipt(survey, shownEntry);
  if (lastSaid) say(lastSaid.msgid, lastSaid.args, { error: lastSaid.error });
}

/** Say `msgid` (a fixed text, translated, {placeholders} from `args`) in the status line; an
 * empty msgid clears it. Said again in the new language when the language changes. */
function say(msgid, args = {}, { error = false } = {}) {
  lastSaid = msgid ? { msgid, args, error } : null;
  const message = msgid ? t(msgid, args) : "";
  statusLine.textContent = message;
  statusLine.classList.toggle("error", error);
  statusLine.hidden = !message;
}

/** Say a message already in the page's language (an error's text). */
function sayText(message, { error = false } = {}) {
  say(message ? "{message}" : "", { message }, { error });
}

function invitationCode() {
  const typed = form.querySelector("[data-invitation]");
  if (shared && typed) return typed.value.trim() || null;
  const fragment = new URLSearchParams(window.location.hash.slice(1));
  const code = fragment.get("invitation");
  return code ? code.trim() : null;
}

const STATUS_TEXT = {
  accepted: () => t("accepted: the aggregator stored your randomized report"),
  duplicate: () => t("already received: the aggregator had this report (it is counted once)"),
  queued: () =>
    t("waiting to be sent: kept on this device, sent again by itself (now or on your next visit)"),
  rejected: () => t("refused by the aggregator"),
};

function showReceipt(survey, entry) {
  shownEntry = entry;
  const receipt = document.getElementById("receipt");
  receipt.dataset.reportId = entry.report.report_id;
  receipt.dataset.status = entry.status;
  document.getElementById("receipt-id").textContent = entry.report.report_id;
  let reason = "";
  if (entry.reason) {
    reason =
      entry.status === "queued"
        ? t(". Last try: {reason}", { reason: entry.reason })
        : `: ${entry.reason}`;
  }
  document.getElementById("receipt-status").textContent = STATUS_TEXT[entry.status]() + reason;
  const list = document.getElementById("receipt-answers");
  list.replaceChildren(
    ...survey.questions
      .filter((question) => Object.hasOwn(entry.report.answers, question.id))
      .map((question) => {
        const item = document.createElement("li");
        const asked = inArm(question, entry.report.arms || {}); // a split ballot's arm
        const sent = shownAnswer(asked, entry.report.answers[question.id]);
        item.textContent = `${questionText(question)} → ${sent}`;
        return item;
      }),
  );
  form.hidden = true;
  receipt.hidden = false;
}

async function showSpent() {
  const spent = await epsilonSpent();
  document.getElementById("spent").textContent = spent.toFixed(2);
  return spent;
}

/** The outbox's counts on the page: [data-waiting], [data-sent], each in a sentence whose
 * plural form follows its number (shown on a shared device, or while reports wait). */
async function showCounts() {
  const { waiting, sent } = await outboxCounts(server, surveyId);
  const outbox = document.querySelector(".outbox");
  for (const [selector, value] of [["[data-waiting]", waiting], ["[data-sent]", sent]]) {
    const output = document.querySelector(selector);
    if (output) output.textContent = String(value);
  }
  if (!outbox) return;
  for (const element of outbox.querySelectorAll("[data-t-plural]")) translateElement(element);
  outbox.hidden = !shared && !waiting; // a personal page's receipt says what was sent
}

// ---------------------------------------------------------------------------------------
// Skip logic (docs/surveys.md): a question whose `relevant` condition is false given the plain
// answers so far is hidden, its inputs disabled, and left out of the report.

/** The value a plain question's control holds now (conditions.js's values: the label, the
 * number, the list of selected labels), or undefined when it has none yet. */
const PLAIN_VALUES = {
  choice: (name) => form.querySelector(`input[name="${name}"]:checked`)?.value,
  boxes: (name) =>
    Array.from(form.querySelectorAll(`input[name="${name}"]:checked`), (box) => box.value),
  number(name) {
    const text = form.querySelector(`input[name="${name}"]`)?.value.trim() || "";
    return /^[+-]?\d+$/.test(text) ? Number(text) : undefined;
  },
  words: () => undefined,
};

/** The questions this respondent is asked, given the plain answers on the form now: the one
 * rule (conditions.js's relevantQuestions, Survey.relevant in Python) the aggregator's
 * ingestion checks too. The value of a question not asked is ignored there. */
function askedQuestions(survey) {
  if (!relevantQuestions) return survey.questions.map((question) => question.id); // no conditions
  const values = {};
  for (const question of survey.questions) {
    if (question.epsilon !== null) continue; // randomized: never read by a condition
    const read = PLAIN_VALUES[questionType(question).control];
    const value = read ? read(CSS.escape(question.id)) : undefined;
    if (value !== undefined) values[question.id] = value;
  }
  return relevantQuestions(survey, values);
}

/** Show the questions asked, hide (and disable) the others, and say what the report spends. */
function updateAsked(survey) {
  const asked = new Set(askedQuestions(survey));
  for (const item of form.querySelectorAll("[data-item]")) {
    const shown = asked.has(item.dataset.item);
    item.hidden = !shown;
    const fieldset = item.querySelector("fieldset");
    if (fieldset) fieldset.disabled = !shown;
  }
  const cost = document.getElementById("cost");
  const spends = reportEpsilon(survey, [...asked], arms);
  if (cost) cost.textContent = String(Number(spends.toPrecision(4)));
  return [...asked];
}

// Split ballot (docs/surveys.md#split-ballot): each split question's arm is drawn when the form
// is shown (afresh for each respondent of a shared device); a question drawn in the direct arm
// says so beside it, before anything is sent, instead of how it would be randomized.
let arms = {};

function showArms(survey) {
  arms = drawArms(survey);
  for (const [id, arm] of Object.entries(arms)) {
    const item = form.querySelector(`[data-item="${CSS.escape(id)}"]`);
    if (!item) continue;
    let notice = item.querySelector("[data-direct-notice]");
    if (!notice) {
      notice = document.createElement("p");
      notice.className = "plain direct-notice";
      notice.dataset.directNotice = "";
      (item.querySelector("fieldset") || item).append(notice);
    }
    notice.textContent = t(DIRECT_NOTICE);
    notice.hidden = arm !== "direct";
    const privacy = item.querySelector("[data-privacy]"); // how it would be randomized
    if (privacy) privacy.hidden = arm === "direct";
  }
}

// How the page reads each kind of form control a question type asks with (deniable.js's
// QUESTION_TYPES names it): the true answer, or an error saying what is missing.
/** A question's text as the page shows it now (in the page's language). */
function questionText(question) {
  const shown = document.querySelector(`[data-question-text="${CSS.escape(question.id)}"]`);
  return shown ? shown.textContent : question.text;
}

const CONTROLS = {
  choice(question, name) {
    const checked = form.querySelector(`input[name="${name}"]:checked`);
    if (!checked) {
      document.getElementById(`q-${question.id}`)?.scrollIntoView({ block: "center" });
      throw new Error(
        t('Answer every question first: "{question}" has no answer.', {
          question: questionText(question),
        }),
      );
    }
    return checked.value;
  },
  boxes(question, name) {
    const boxes = form.querySelectorAll(`input[name="${name}"]:checked`);
    return Array.from(boxes, (box) => box.value);
  },
  number(question, name) {
    const input = form.querySelector(`input[name="${name}"]`);
    const text = input.value.trim();
    const number = Number(text);
    if (!/^[+-]?\d+$/.test(text) || number < question.min || number > question.max) {
      input.focus();
      throw new Error(
        t('"{question}" needs a whole number from {low} to {high}.', {
          question: questionText(question),
          low: question.min,
          high: question.max,
        }),
      );
    }
    return number;
  },
  words(question, name) {
    const input = form.querySelector(`input[name="${name}"]`);
    if (!normalizeText(input.value)) {
      input.focus();
      throw new Error(
        t('Answer every question first: "{question}" has no answer.', {
          question: questionText(question),
        }),
      );
    }
    return input.value;
  },
};

/** The true answers of the questions `asked` (and of no other). */
function truthFromForm(survey, asked) {
  const truth = {};
  const wanted = new Set(asked);
  for (const question of survey.questions) {
    if (!wanted.has(question.id)) continue;
    const read = CONTROLS[questionType(question).control];
    truth[question.id] = read(question, CSS.escape(question.id));
  }
  return truth;
}

/** The survey the page was made with: {survey, hash} from #pinned-survey (its hash checked,
 * and the one main's data-survey-hash names), or null on a page without one. */
async function pinnedSurvey() {
  const block = document.getElementById("pinned-survey");
  if (!block) return null;
  const pinned = JSON.parse(block.textContent);
  const hash = await surveyHash(pinned.survey);
  const named = main.dataset.surveyHash;
  if (hash !== pinned.survey_hash || (named && named !== hash) || pinned.survey.id !== surveyId) {
    throw new Error(t("the survey in this page does not match its hash; do not answer it"));
  }
  return { survey: pinned.survey, hash };
}

/** Marks a text for extraction where it is defined; t() or say() translates it where used. */
const N_ = (msgid) => msgid;

const OFFLINE = N_(
  "Offline: answering with the survey saved in this page. Answers wait on this device and are sent when it is back online.",
);

/** Say whether the device is offline (a message of its own, cleared when back online). */
function showNetwork() {
  if (!navigator.onLine) say(OFFLINE);
  else if (lastSaid?.msgid === OFFLINE) say("");
}

/** The survey to answer: the pinned one, once the aggregator publishes the same (online), or
 * as it is when the aggregator cannot be reached (offline: the outbox sends later). */
async function surveyToAnswer() {
  const pinned = await pinnedSurvey();
  let published;
  try {
    published = await fetchSurvey(server, surveyId);
  } catch (error) {
    if (pinned && error.unreachable) {
      say(OFFLINE);
      return pinned;
    }
    throw error;
  }
  if (pinned && published.hash !== pinned.hash) {
    throw new Error(
      t(
        "the aggregator now publishes another version of this survey (hash {published}…, this page has {pinned}…). Nothing was sent: get the current page",
        { published: published.hash.slice(0, 12), pinned: pinned.hash.slice(0, 12) },
      ),
    );
  }
  return pinned || published;
}

/** A personal page takes its invitation from the link (#invitation=CODE), not a typed field. */
function hideTypedInvitation() {
  const invitation = form.querySelector("[data-invitation]");
  const label = invitation?.closest("label");
  if (label) label.hidden = true;
}

/** The survey document as the page carries it (for its languages before it is checked: the
 * texts shown are the page's own either way), or null. */
function carriedSurvey() {
  try {
    return JSON.parse(document.getElementById("pinned-survey")?.textContent || "null")?.survey;
  } catch {
    return null;
  }
}

/** For a survey in several languages, languages.js shows the page in its language (?lang, the
 * browser's, the survey's default) and lets the switcher change it. */
async function startLanguages(survey) {
  if (!survey?.questions) return;
  currentSurvey = survey;
  const first = survey.language || "en";
  if (!Object.keys(survey.translations || {}).some((tag) => tag !== first)) return;
  languages = await import("./languages.js");
  languages.start(survey, rendered, (tag) => applyLanguage(currentSurvey, tag));
}

/** relevantQuestions of conditions.js, for a survey with skip logic (else every question is
 * asked), memo.js, for a survey that repeats questions across waves, and markdown.js, for a
 * survey whose texts hold ODK's markdown. */
let relevantQuestions = null;
let memo = null;
let markdown = null;
/** shared-device.js, on a shared device. */
let device = null;

/** Whether any of the survey's texts, in any of its languages, may hold markdown. */
function hasMarkdown(survey) {
  const texts = [];
  for (const words of [survey, ...Object.values(survey.translations || {})]) {
    texts.push(words.title, words.description);
    const questions = words === survey ? survey.questions : Object.values(words.questions || {});
    for (const q of questions) texts.push(q.text, q.hint, q.note, ...(q.options || []));
  }
  return texts.some((text) => typeof text === "string" && /[*_\\\n]/.test(text));
}

/** Load the modules the survey needs besides deniable.js (before the service worker keeps the
 * page's files, so that it keeps these too). */
async function loadModules(survey) {
  if (!survey?.questions) return;
  if (survey.questions.some((question) => typeof question.relevant === "string")) {
    ({ relevantQuestions } = await import("./conditions.js"));
  }
  if (survey.questions.some((question) => isLongitudinal(question))) {
    memo = await import("./memo.js");
  }
  if (survey.relay) useRelay((await import("./ohttp.js")).relayAnswer); // docs/anonymity.md
  if (hasMarkdown(survey)) markdown = await import("./markdown.js");
  if (shared) device = await import("./shared-device.js");
}

/** Why this page refuses a survey that repeats questions across waves (docs/surveys.md#waves),
 * or null: their permanent answers are kept on the respondent's own device (memo.js), which a
 * shared device cannot do for each of its respondents. */
function refuseRepeated(survey) {
  if (!survey.questions.some((question) => question.longitudinal)) return null;
  if (shared) {
    return "it repeats questions across waves, which needs each respondent's own device to remember their permanent answers; it cannot be answered on a shared device. Nothing was sent.";
  }
  return null;
}

async function start() {
  const carriedDocument = carriedSurvey();
  await loadModules(carriedDocument);
  await startLanguages(carriedDocument);
  markdown?.showMarkdown();
  if (!(await supported())) {
    say(
      "This browser cannot answer this survey safely: it lacks Ed25519 signatures in WebCrypto or IndexedDB storage. Nothing was sent. Use a current browser, or the deniable command-line tool.",
      {},
      { error: true },
    );
    form.querySelector("button[type=submit]").disabled = true;
    return;
  }
  registerWorker();
  let chosen;
  try {
    chosen = await surveyToAnswer();
  } catch (error) {
    say("This survey cannot be answered now: {reason}", { reason: error.message }, { error: true });
    return;
  }
  const { survey, hash } = chosen;
  const repeated = refuseRepeated(survey);
  if (repeated) {
    say("This survey cannot be answered now: {reason}", { reason: repeated }, { error: true });
    form.querySelector("button[type=submit]").disabled = true;
    return;
  }
  if (survey !== currentSurvey) {
    currentSurvey = survey;
    if (languages) languages.show(survey, language);
    else applyLanguage(survey, language);
  }
  showArms(survey);
  let asked = updateAsked(survey);
  form.addEventListener("input", () => {
    asked = updateAsked(survey);
  });
  form.addEventListener("change", () => {
    asked = updateAsked(survey);
  });
  showNetwork();
  window.addEventListener("offline", showNetwork);
  window.addEventListener("online", showNetwork);
  const entry = shared ? null : await storedEntry(server, surveyId);
  if (entry) showReceipt(survey, entry);
  retryQueued(survey, { eager: true }); // each open sends what waits, unless told to wait
  window.addEventListener("online", () => retryQueued(survey, { eager: true }));
  await showCounts();
  const button = form.querySelector("button[type=submit]");
  if (shared) {
    device.showSharedMode(form);
    document.querySelector("[data-next]")?.addEventListener("click", () =>
      device.nextRespondent(form, () => {
        showArms(survey);
        updateAsked(survey);
        say("");
      }),
    );
  } else {
    hideTypedInvitation();
    const spent = await showSpent();
    // The questions asked whatever the answers; one asked in waves may cost nothing (memo.js).
    const once = asked.filter((id) => !isLongitudinal(survey.questions.find((q) => q.id === id)));
    const least = reportEpsilon(survey, once, arms);
    if (spent + least > cap + 1e-9 && !entry) {
      say(
        "Answering would bring the epsilon spent on this browser to {total}, over its cap of {cap}: nothing will be sent.",
        { total: (spent + least).toFixed(2), cap },
        { error: true },
      );
      return;
    }
  }
  button.disabled = false;
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    button.disabled = true;
    say("");
    try {
      say("Randomizing and sending…");
      asked = updateAsked(survey);
      if (shared) {
        // The true answers live only in this call: read, randomized and signed, then the form
        // is cleared; the page keeps no reference to them, nor to the noisy report.
        const sent = device.answerShared(server, survey, hash, truthFromForm(survey, asked), {
          invitation: invitationCode(),
          asked,
          arms,
        });
        await sent;
        say("");
        showNetwork();
        device.showThanks(form);
      } else {
        const done = await answer(server, survey, hash, truthFromForm(survey, asked), {
          cap,
          invitation: invitationCode(),
          asked,
          arms,
          memo,
        });
        say("");
        showReceipt(survey, done);
        await showSpent();
        document.getElementById("receipt").focus();
      }
      await showCounts();
      await scheduleRetry(survey);
    } catch (error) {
      sayText(error.message, { error: true });
      button.disabled = false;
    }
  });
}

// Queued reports are sent again when due (deniable.js's delivery policy): by a timer while the
// page is open, when the browser is back online, on each open and by Background Sync (the
// service worker). One sender at a time across the page, other tabs and the worker (a Web
// Lock in deniable.js), so no report is posted twice at once (the aggregator counts a
// report_id once anyway).
let retrying = null;
let retryTimer = null;

function retryQueued(survey, options = {}) {
  retrying ??= (async () => {
    try {
      await resendQueued(server, options);
      const entry = shared ? null : await storedEntry(server, surveyId);
      if (entry) showReceipt(survey, entry);
      await showCounts();
    } finally {
      retrying = null;
    }
    await scheduleRetry(survey);
  })();
  return retrying;
}

async function scheduleRetry(survey) {
  clearTimeout(retryTimer);
  const at = await nextRetry(server);
  if (at === null) return;
  retryTimer = setTimeout(() => retryQueued(survey), Math.max(0, at - Date.now()));
  askForSync();
}

// ---------------------------------------------------------------------------------------
// The service worker (sw.js): the page and its files open offline after one online visit, and
// Background Sync sends the outbox when the network comes back, even with the page closed.

let registration = null;

function registerWorker() {
  const url = main.dataset.serviceWorker;
  if (!url || !("serviceWorker" in navigator)) return;
  navigator.serviceWorker
    .register(url, { type: "module" })
    .then(async (found) => {
      registration = found;
      const ready = await navigator.serviceWorker.ready;
      // The first visit was not served through the worker: ask it to keep what the page loaded.
      const loaded = performance.getEntriesByType("resource").map((e) => e.name);
      const page = new URL(window.location.href);
      page.hash = "";
      const published = new URL(`/api/v1/surveys/${encodeURIComponent(surveyId)}`, server);
      ready.active?.postMessage({ cache: [page.href, ...loaded, published.href] });
      askForSync();
    })
    .catch(() => {
      // No worker (a private window, an old browser): the page still works online.
    });
}

/** Offline with reports waiting: ask for a Background Sync, which the browser fires once the
 * network is back (with this page closed too). Online, the page's timer sends them when due. */
async function askForSync() {
  if (navigator.onLine || !registration?.sync) return;
  if ((await outboxCounts(server, surveyId)).waiting) {
    registration.sync.register("deniable-outbox").catch(() => {});
  }
}

window.addEventListener("offline", () => askForSync());

start();
