// The respondent page (the aggregator's /s/<survey>, or an exported copy hosted anywhere):
// reads the form, answers through deniable.js, shows the receipt, keeps the outbox going.
// Everything that touches a true answer stays in this browser. The page talks to one origin,
// the aggregator's (main's data-aggregator), and randomizes with the survey pinned in the page
// (#pinned-survey): an aggregator publishing another survey under this id is refused.
import {
  answer,
  answerShared,
  epsilonSpent,
  fetchSurvey,
  nextRetry,
  normalizeText,
  outboxCounts,
  questionType,
  resendQueued,
  shownAnswer,
  storedEntry,
  supported,
  surveyHash,
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

function say(message, { error = false } = {}) {
  statusLine.textContent = message;
  statusLine.classList.toggle("error", error);
  statusLine.hidden = !message;
}

function invitationCode() {
  const typed = form.querySelector("[data-invitation]");
  if (shared && typed) return typed.value.trim() || null;
  const fragment = new URLSearchParams(window.location.hash.slice(1));
  const code = fragment.get("invitation");
  return code ? code.trim() : null;
}

const STATUS_TEXT = {
  accepted: "accepted: the aggregator stored your randomized report",
  duplicate: "already received: the aggregator had this report (it is counted once)",
  queued: "waiting to be sent: kept on this device, sent again by itself (now or on your next visit)",
  rejected: "refused by the aggregator",
};

function showReceipt(survey, entry) {
  const receipt = document.getElementById("receipt");
  receipt.dataset.reportId = entry.report.report_id;
  receipt.dataset.status = entry.status;
  document.getElementById("receipt-id").textContent = entry.report.report_id;
  let reason = "";
  if (entry.reason) reason = `${entry.status === "queued" ? ". Last try" : ""}: ${entry.reason}`;
  document.getElementById("receipt-status").textContent = STATUS_TEXT[entry.status] + reason;
  const list = document.getElementById("receipt-answers");
  list.replaceChildren(
    ...survey.questions.map((question) => {
      const item = document.createElement("li");
      item.textContent = `${question.text} → ${shownAnswer(question, entry.report.answers[question.id])}`;
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

/** The outbox's counts on the page: [data-waiting], [data-sent] and a sentence. */
async function showCounts() {
  const { waiting, sent } = await outboxCounts(server, surveyId);
  const outbox = document.querySelector(".outbox");
  for (const [selector, value] of [["[data-waiting]", waiting], ["[data-sent]", sent]]) {
    const output = document.querySelector(selector);
    if (output) output.textContent = String(value);
  }
  if (outbox) outbox.hidden = false;
}

// How the page reads each kind of form control a question type asks with (deniable.js's
// QUESTION_TYPES names it): the true answer, or an error saying what is missing.
const CONTROLS = {
  choice(question, name) {
    const checked = form.querySelector(`input[name="${name}"]:checked`);
    if (!checked) {
      document.getElementById(`q-${question.id}`)?.scrollIntoView({ block: "center" });
      throw new Error(`Answer every question first: "${question.text}" has no answer.`);
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
        `"${question.text}" needs a whole number from ${question.min} to ${question.max}.`,
      );
    }
    return number;
  },
  words(question, name) {
    const input = form.querySelector(`input[name="${name}"]`);
    if (!normalizeText(input.value)) {
      input.focus();
      throw new Error(`Answer every question first: "${question.text}" has no answer.`);
    }
    return input.value;
  },
};

function truthFromForm(survey) {
  const truth = {};
  for (const question of survey.questions) {
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
    throw new Error("the survey in this page does not match its hash; do not answer it");
  }
  return { survey: pinned.survey, hash };
}

const OFFLINE =
  "Offline: answering with the survey saved in this page. Answers wait on this device and " +
  "are sent when it is back online.";

/** Say whether the device is offline (a message of its own, cleared when back online). */
function showNetwork() {
  if (!navigator.onLine) say(OFFLINE);
  else if (statusLine.textContent === OFFLINE) say("");
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
      `the aggregator now publishes another version of this survey (hash ${published.hash.slice(0, 12)}…, ` +
        `this page has ${pinned.hash.slice(0, 12)}…). Nothing was sent: get the current page`,
    );
  }
  return pinned || published;
}

function showSharedMode(survey) {
  const note = document.querySelector("[data-shared-note]");
  if (note) {
    if (!note.textContent.trim()) {
      note.textContent =
        "This device is shared: each submission is a new respondent, with a fresh key. The " +
        "epsilon ledger of this browser does not apply; the survey's epsilon is " +
        `${Number(survey.epsilon.toPrecision(4))}.`;
    }
    note.hidden = false;
  }
  const spent = document.getElementById("spent")?.closest("p");
  if (spent) spent.hidden = true;
  const invitation = form.querySelector("[data-invitation]");
  if (invitation) invitation.hidden = false;
}

/** A personal page takes its invitation from the link (#invitation=CODE), not a typed field. */
function hideTypedInvitation() {
  const invitation = form.querySelector("[data-invitation]");
  const label = invitation?.closest("label");
  if (label) label.hidden = true;
}

/** After one respondent's submit: only the thanks, the counts and the button for the next. */
function showThanks() {
  form.reset();
  form.hidden = true;
  document.getElementById("receipt").hidden = true;
  const thanks = document.querySelector("[data-thanks]");
  thanks.hidden = false;
  thanks.querySelector("[data-next]")?.focus();
}

function nextRespondent() {
  form.reset();
  say("");
  document.querySelector("[data-thanks]").hidden = true;
  form.hidden = false;
  form.querySelector("button[type=submit]").disabled = false;
  window.scrollTo(0, 0);
  form.querySelector("input:not([type=hidden])")?.focus();
}

async function start() {
  if (!(await supported())) {
    say(
      "This browser cannot answer this survey safely: it lacks Ed25519 signatures in WebCrypto " +
        "or IndexedDB storage. Nothing was sent. Use a current browser, or the deniable " +
        "command-line tool.",
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
    say(`This survey cannot be answered now: ${error.message}`, { error: true });
    return;
  }
  const { survey, hash } = chosen;
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
    showSharedMode(survey);
    document.querySelector("[data-next]")?.addEventListener("click", nextRespondent);
  } else {
    hideTypedInvitation();
    const spent = await showSpent();
    if (spent + survey.epsilon > cap + 1e-9 && !entry) {
      say(
        `Answering would bring the epsilon spent on this browser to ${(spent + survey.epsilon).toFixed(2)}, ` +
          `over its cap of ${cap}: nothing will be sent.`,
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
      if (shared) {
        // The true answers live only in this call: read, randomized and signed, then the form
        // is cleared; the page keeps no reference to them, nor to the noisy report.
        const sent = answerShared(server, survey, hash, truthFromForm(survey), {
          invitation: invitationCode(),
        });
        await sent;
        showNetwork();
        showThanks();
      } else {
        const done = await answer(server, survey, hash, truthFromForm(survey), {
          cap,
          invitation: invitationCode(),
        });
        say("");
        showReceipt(survey, done);
        await showSpent();
        document.getElementById("receipt").focus();
      }
      await showCounts();
      await scheduleRetry(survey);
    } catch (error) {
      say(error.message, { error: true });
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
