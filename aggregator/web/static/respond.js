// The respondent page (/s/<survey>): reads the form, answers through deniable.js, shows the
// receipt. Everything that touches a true answer stays in this browser.
import {
  answer,
  epsilonSpent,
  fetchSurvey,
  nextRetry,
  normalizeText,
  questionType,
  resendQueued,
  shownAnswer,
  storedEntry,
  supported,
} from "./deniable.js";

const main = document.getElementById("main");
const form = document.getElementById("answer");
const statusLine = document.getElementById("status");
const server = window.location.origin;
const surveyId = main.dataset.survey;
const cap = Number(main.dataset.cap);

function say(message, { error = false } = {}) {
  statusLine.textContent = message;
  statusLine.classList.toggle("error", error);
  statusLine.hidden = !message;
}

function invitationCode() {
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
  let published;
  try {
    published = await fetchSurvey(server, surveyId);
  } catch (error) {
    say(`This survey cannot be answered now: ${error.message}`, { error: true });
    return;
  }
  const { survey, hash } = published;
  const entry = await storedEntry(server, surveyId);
  if (entry) showReceipt(survey, entry);
  retryQueued(survey, { eager: true }); // each open sends what waits, unless told to wait
  window.addEventListener("online", () => retryQueued(survey, { eager: true }));
  const spent = await showSpent();
  const button = form.querySelector("button[type=submit]");
  if (spent + survey.epsilon > cap + 1e-9 && !entry) {
    say(
      `Answering would bring the epsilon spent on this browser to ${(spent + survey.epsilon).toFixed(2)}, ` +
        `over its cap of ${cap}: nothing will be sent.`,
      { error: true },
    );
    return;
  }
  button.disabled = false;
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    button.disabled = true;
    say("");
    try {
      const truth = truthFromForm(survey);
      say("Randomizing and sending…");
      const done = await answer(server, survey, hash, truth, {
        cap,
        invitation: invitationCode(),
      });
      say("");
      showReceipt(survey, done);
      await showSpent();
      document.getElementById("receipt").focus();
      await scheduleRetry(survey);
    } catch (error) {
      say(error.message, { error: true });
      button.disabled = false;
    }
  });
}

// Queued reports are sent again when due (deniable.js's delivery policy): by a timer while the
// page is open, when the browser is back online, and on each open. One round at a time, so
// the page never posts a report twice at once (the aggregator counts a report_id once anyway).
let retrying = null;
let retryTimer = null;

function retryQueued(survey, options = {}) {
  retrying ??= (async () => {
    try {
      await resendQueued(server, options);
      const entry = await storedEntry(server, surveyId);
      if (entry) showReceipt(survey, entry);
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
  if (at !== null) retryTimer = setTimeout(() => retryQueued(survey), Math.max(0, at - Date.now()));
}

start();
