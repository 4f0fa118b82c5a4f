// Talking to the aggregator, and the delivery policy (as deniable.client.delivery;
// tests/conformance/delivery.json): a 2xx naming the report gives its result; 408, 425, 429,
// 5xx and anything but the aggregator's own problem+json leave it queued, sent again after
// Retry-After (at most a day) or a backoff; any other 4xx problem+json rejects it.
import { allEntries, putEntry } from "./ledger.js";
import { enrollment } from "./signing.js";
import { PY_SPACE } from "./text.js";

/** What a refusal says (its problem+json's detail). */
export async function problemDetail(response) {
  try {
    const body = await response.json();
    return String(body.detail || body.reason || response.statusText).slice(0, 1000);
  } catch {
    return response.statusText || `HTTP ${response.status}`;
  }
}

function postEnrollment(server, enrolled) {
  return fetch(
    new URL(`/api/v1/surveys/${encodeURIComponent(enrolled.survey)}/enrollments`, server),
    {
      method: "POST",
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify(enrolled.body),
      redirect: "manual",
    },
  );
}

/** Enroll this survey's key with an invitation code (invite-only surveys). */
export async function enroll(server, survey, hash, key, invitation) {
  const response = await postEnrollment(server, await enrollment(survey, hash, key, invitation));
  if (!response.ok) throw new Error(await problemDetail(response));
}

export const MAX_RETRY_AFTER = 86400;
const MAX_BACKOFF = 3600;
const TRANSIENT = [408, 425, 429];
const MONTHS = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"];
const IMF_FIXDATE =
  /^(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun), ([0-9]{2}) ([A-Z][a-z]{2}) ([0-9]{4}) ([0-9]{2}):([0-9]{2}):([0-9]{2}) GMT$/;
const trimOWS = (text) => String(text).replace(/^[ \t]+|[ \t]+$/g, "");

/** Server text as it is kept and shown: one line, no control or bidirectional formatting
 * characters, at most `limit` characters. */
export function plainText(text, limit = 300) {
  const line = String(text)
    .replace(/[\p{Cc}\p{Cf}\p{Zl}\p{Zp}]/gu, " ")
    .split(PY_SPACE)
    .filter((part) => part !== "")
    .join(" ");
  const chars = Array.from(line);
  return chars.length <= limit ? line : `${chars.slice(0, limit - 1).join("")}…`;
}

/** The seconds a Retry-After value (delay-seconds or an IMF-fixdate) asks to wait, capped at a
 * day (a date past is 0); null when absent or malformed. `now` in seconds since the epoch. */
export function retryAfterSeconds(value, now = Date.now() / 1000) {
  if (value === null || value === undefined) return null;
  const text = trimOWS(value);
  if (/^[0-9]+$/.test(text)) return Math.min(Number(text), MAX_RETRY_AFTER);
  const m = IMF_FIXDATE.exec(text);
  const month = m ? MONTHS.indexOf(m[2]) : -1;
  if (month < 0) return null;
  const [day, year, hour, minute, second] = [1, 3, 4, 5, 6].map((i) => Number(m[i]));
  const when = new Date(Date.UTC(year, month, day, hour, minute, second));
  const exact = [when.getUTCDate(), when.getUTCHours(), when.getUTCMinutes(), when.getUTCSeconds()];
  if (year < 1970 || exact.join() !== [day, hour, minute, second].join()) return null;
  return Math.min(Math.max(0, Math.ceil(when.getTime() / 1000 - now)), MAX_RETRY_AFTER);
}

const isObject = (value) => value !== null && typeof value === "object" && !Array.isArray(value);
const isProblem = (type) =>
  trimOWS(String(type || "").split(";")[0]).toLowerCase() === "application/problem+json";

function said(found) {
  for (const key of ["detail", "reason", "title"]) {
    const text = typeof found[key] === "string" ? plainText(found[key]) : "";
    if (text) return text;
  }
  return null;
}

/** What an answer to POST /api/v1/reports means for the report `reportId`, sent alone (`index`
 * null) or as item `index` of a batch: {outcome, reason, retryAfter} (seconds, or null). */
export function classifyDelivery(
  status, contentType, retryAfter, bodyText, reportId, index = null, now = Date.now() / 1000,
) {
  let found = null;
  try {
    found = JSON.parse(bodyText);
  } catch {
    // not JSON: no result, and no problem
  }
  let why;
  if (status >= 200 && status < 300) {
    let item = found;
    if (index !== null) {
      item = isObject(found) && Array.isArray(found.results) ? found.results[index] : null;
    }
    if (isObject(item) && item.report_id === reportId) {
      if (item.result === "accepted" || item.result === "duplicate") {
        return { outcome: item.result, reason: null, retryAfter: null };
      }
      if (item.result === "rejected") {
        return { outcome: "rejected", reason: said(item) || `HTTP ${status}`, retryAfter: null };
      }
    }
    why = "no result for this report";
  } else if (isProblem(contentType) && isObject(found)) {
    if (status >= 400 && status < 500 && !TRANSIENT.includes(status)) {
      return { outcome: "rejected", reason: said(found) || `HTTP ${status}`, retryAfter: null };
    }
    why = said(found) || "no detail";
  } else {
    const redirect = status >= 300 && status < 400;
    why = redirect ? "a redirect, not the aggregator's answer" : "not the aggregator's answer";
  }
  const wait = retryAfterSeconds(retryAfter, now);
  return { outcome: "queued", reason: `HTTP ${status}: ${why}`, retryAfter: wait };
}

/** The entry after a delivery: its outcome and reason; if queued, `retry_at` (ms) by
 * Retry-After (a `firm` time) or a doubling backoff. A settled shared-device entry keeps only
 * its status. */
function settled(entry, delivery, now = Date.now()) {
  const { outcome, reason, retryAfter } = delivery;
  if (outcome !== "queued") {
    const done = { ...entry, status: outcome, reason, retry_at: null };
    if (entry.shared) {
      delete done.report;
      delete done.enrollment;
    }
    return done;
  }
  const attempts = (entry.attempts || 0) + 1;
  const backoff = Math.min(MAX_BACKOFF, 5 * 2 ** Math.min(attempts - 1, 12));
  const firm = retryAfter !== null;
  const retryAt = now + 1000 * (firm ? retryAfter : backoff);
  const unreachable = delivery === UNREACHABLE;
  return { ...entry, status: "queued", reason, attempts, firm, unreachable, tried_at: now, retry_at: retryAt };
}

const UNREACHABLE = { outcome: "queued", reason: "the aggregator could not be reached", retryAfter: null };

/** POST one body to the report endpoint; the answer's parts the policy reads (a redirect,
 * which hides its status, is no answer), or null if none came. */
async function postReports(server, body) {
  try {
    const response = await fetch(new URL("/api/v1/reports", server), {
      method: "POST",
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify(body),
      redirect: "manual",
    });
    const status = response.type === "opaqueredirect" ? 300 : response.status;
    const header = (name) => response.headers.get(name);
    return { status, type: header("Content-Type"), retry: header("Retry-After"), text: await response.text() };
  } catch {
    return null;
  }
}

function classifyAnswer(answer, reportId, index = null) {
  if (!answer) return UNREACHABLE;
  return classifyDelivery(answer.status, answer.type, answer.retry, answer.text, reportId, index);
}

/** Reports per batch POST (the aggregator takes DENIABLE_MAX_BATCH, 1000 by default). */
export const BATCH_SIZE = 100;

/** Deliveries of `entries`, sent in batches of BATCH_SIZE; a batch refused as a whole (a 4xx
 * problem, say too large) is sent one by one. */
async function deliverAll(server, entries) {
  const out = [];
  for (let start = 0; start < entries.length; start += BATCH_SIZE) {
    const group = entries.slice(start, start + BATCH_SIZE);
    if (group.length === 1) {
      const answer = await postReports(server, group[0].report);
      out.push(classifyAnswer(answer, group[0].report.report_id));
      continue;
    }
    const answer = await postReports(server, { reports: group.map((entry) => entry.report) });
    const refusedWhole =
      answer && answer.status >= 400 && answer.status < 500 && !TRANSIENT.includes(answer.status) &&
      isProblem(answer.type);
    for (const [i, entry] of group.entries()) {
      const id = entry.report.report_id;
      out.push(refusedWhole ? classifyAnswer(await postReports(server, entry.report), id) : classifyAnswer(answer, id, i));
    }
  }
  return out;
}

// A survey that names a relay (docs/anonymity.md) has each of its reports sealed and sent
// through it by ohttp.js, loaded when first needed (the service worker, which cannot load a
// module later, hands it over with useRelay).
let relayAnswer = null;

/** The function that posts an entry through its relay (ohttp.js's relayAnswer). */
export function useRelay(post) {
  relayAnswer = post;
}

/** The survey's route as an entry keeps it: its relay and the key its reports are sealed to. */
export const routeOf = (survey) => (survey.relay ? { relay: survey.relay, ohttp_keys: survey.ohttp_keys } : {});

/** Deliveries of `entries`, in order: straight to the aggregator in batches, or each on its own
 * through its survey's relay (by the same delivery policy). */
async function deliverRouted(server, entries) {
  const direct = await deliverAll(server, entries.filter((entry) => !entry.relay));
  if (direct.length !== entries.length && !relayAnswer) ({ relayAnswer } = await import("./ohttp.js"));
  const relayed = await Promise.all(
    entries.map((entry) => (entry.relay ? relayAnswer(server, entry) : null)),
  );
  return entries.map((entry, i) =>
    entry.relay ? classifyAnswer(relayed[i], entry.report.report_id) : direct.shift(),
  );
}

/** Send an entry's enrollment (before its report); null once enrolled, else its delivery. */
export async function sendEnrollment(server, entry) {
  let response;
  try {
    response = await postEnrollment(server, entry.enrollment);
  } catch {
    return UNREACHABLE;
  }
  if (response.ok) return null;
  const status = response.type === "opaqueredirect" ? 300 : response.status;
  const text = await response.text();
  const found = classifyDelivery(
    status, response.headers.get("Content-Type"), response.headers.get("Retry-After"), text, null,
  );
  const reason = found.reason && `enrollment: ${found.reason}`;
  return { ...found, outcome: found.outcome === "queued" ? "queued" : "rejected", reason };
}

/** Run `work` as the only sender of this origin's outbox (the page, other tabs and the
 * service worker take turns). */
export function withOutboxLock(work) {
  const locks = globalThis.navigator?.locks;
  return locks ? locks.request("deniable-outbox", () => work()) : work();
}

/** Send these entries (already read inside the lock) and save what became of each. */
async function sendEntries(server, entries, now = Date.now()) {
  const updated = new Map();
  const ready = [];
  for (const entry of entries) {
    if (!entry.enrollment) {
      ready.push(entry);
      continue;
    }
    const refused = await sendEnrollment(server, entry);
    if (refused) updated.set(entry, settled(entry, refused, now));
    else ready.push({ ...entry, enrollment: undefined });
  }
  const deliveries = await deliverRouted(server, ready);
  ready.forEach((entry, i) => {
    const original = entries.find((e) => e.report?.report_id === entry.report.report_id);
    const clean = { ...entry };
    delete clean.enrollment;
    updated.set(original, settled(clean, deliveries[i], now));
  });
  const out = entries.map((entry) => updated.get(entry));
  for (const entry of out) await putEntry(entry);
  return out;
}

/** POST the entry's report; the entry with its new status by the delivery policy, saved. */
export async function send(server, entry) {
  const [updated] = await withOutboxLock(() => sendEntries(server, [entry]));
  return updated;
}

/** The least time (ms) between two eager tries of a report: the page and the service worker,
 * both woken by the network coming back, do not both hit a busy aggregator. */
const EAGER_GAP = 5_000;

/** Whether a queued entry is due: its time has come, or (`eager`) it waits on a backoff, not a
 * firm time, and found no network last time or was tried a while ago. */
function due(entry, eager, now) {
  if (!entry.retry_at || entry.retry_at <= now) return true;
  const rested = entry.unreachable || !entry.tried_at || now - entry.tried_at >= EAGER_GAP;
  return eager && !entry.firm && rested;
}

/** Send the due queued reports of `server` (null: every server), one sender at a time; every
 * queued entry, as it is now. */
export function resendQueued(server, { eager = false, now = Date.now() } = {}) {
  const origin = server === null ? null : new URL(server).origin;
  return withOutboxLock(async () => {
    const queued = (await allEntries()).filter(
      (entry) => entry.status === "queued" && entry.report && (origin === null || entry.server === origin),
    );
    const byServer = new Map();
    for (const entry of queued) {
      if (!due(entry, eager, now)) continue;
      byServer.set(entry.server, [...(byServer.get(entry.server) || []), entry]);
    }
    const sent = new Map();
    for (const [to, group] of byServer) {
      const updated = await sendEntries(to, group, now);
      group.forEach((entry, i) => sent.set(entry, updated[i]));
    }
    return queued.map((entry) => sent.get(entry) || entry);
  });
}

/** When this server's next queued report is due (ms since the epoch), or null if none waits. */
export async function nextRetry(server) {
  const origin = new URL(server).origin;
  const times = (await allEntries())
    .filter((entry) => entry.status === "queued" && entry.server === origin)
    .map((entry) => entry.retry_at || 0);
  return times.length ? Math.min(...times) : null;
}
