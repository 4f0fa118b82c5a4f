// deniable's protocol in the browser: the same randomization, canonical JSON, survey hash,
// keys, signatures and local ledger as the Python client (deniable.client), on web platform
// APIs only (WebCrypto, IndexedDB, crypto.getRandomValues). The true answers never leave the
// device: only the randomized report is stored and sent.

// ---------------------------------------------------------------------------------------
// Exact probabilities and secure sampling

/** An exact probability {num, den} (BigInt) from the resolved form's text ("0.8", "2/3"). */
export function parseProbability(text) {
  const value = String(text).trim();
  let match = /^(\d+)\s*\/\s*(\d+)$/.exec(value);
  if (match) {
    const num = BigInt(match[1]);
    const den = BigInt(match[2]);
    if (den === 0n || num > den) throw new Error(`not a probability: ${text}`);
    return { num, den };
  }
  match = /^(\d*)(?:\.(\d*))?$/.exec(value);
  if (!match || (match[1] === "" && !match[2])) throw new Error(`not a probability: ${text}`);
  const fraction = match[2] || "";
  const num = BigInt((match[1] || "0") + fraction);
  const den = 10n ** BigInt(fraction.length);
  if (num > den) throw new Error(`not a probability: ${text}`);
  return { num, den };
}

function bitLength(n) {
  return n === 0n ? 0 : n.toString(2).length;
}

/** A uniformly random BigInt in [0, n), by rejection sampling on secure random bits. */
export function randomBelow(n) {
  const limit = BigInt(n);
  if (limit <= 0n) throw new Error("randomBelow needs a positive bound");
  const bits = bitLength(limit - 1n);
  if (bits === 0) return 0n;
  const bytes = new Uint8Array(Math.ceil(bits / 8));
  const excess = BigInt(bytes.length * 8 - bits);
  for (;;) {
    crypto.getRandomValues(bytes);
    let value = 0n;
    for (const byte of bytes) value = (value << 8n) | BigInt(byte);
    value >>= excess;
    if (value < limit) return value;
  }
}

/** True with probability exactly p ({num, den}): an integer comparison, never Math.random. */
export function flip(p) {
  return randomBelow(p.den) < p.num;
}

// ---------------------------------------------------------------------------------------
// Mechanisms (as deniable.shared.mechanisms)

function optionIndex(question, value) {
  const options = question.options;
  if (question.type === "binary") {
    if (value === true || value === 1 || value === "1" || value === "yes") return 1;
    if (value === false || value === 0 || value === "0" || value === "no") return 0;
  } else {
    if (Number.isInteger(value) && value >= 0 && value < options.length) return value;
    const found = options.indexOf(value);
    if (found >= 0) return found;
  }
  throw new Error(`${question.id}: ${JSON.stringify(value)} is not an answer`);
}

function integerOffset(question, value) {
  const text = typeof value === "string" ? value.trim() : value;
  const number = typeof text === "string" && /^[+-]?\d{1,10}$/.test(text) ? Number(text) : text;
  if (!Number.isInteger(number) || number < question.min || number > question.max) {
    throw new Error(
      `${question.id}: ${JSON.stringify(value)} is not a whole number from ${question.min} to ${question.max}`,
    );
  }
  return number - question.min;
}

function selection(question, value) {
  let items = value;
  if (typeof value === "string") {
    items = question.options.includes(value.trim())
      ? [value.trim()]
      : value.split(",").filter((part) => part.trim());
  }
  if (!Array.isArray(items)) {
    throw new Error(`${question.id}: ${JSON.stringify(value)} is not a list of options`);
  }
  const chosen = new Set();
  for (const item of items) {
    const label = typeof item === "string" ? item.trim() : item;
    const index = Number.isInteger(label) ? label : question.options.indexOf(label);
    if (!(index >= 0 && index < question.options.length)) {
      throw new Error(`${question.id}: ${JSON.stringify(item)} is not an option`);
    }
    chosen.add(index);
  }
  return chosen;
}

function params(question) {
  const raw = question[question.mechanism] || {};
  const out = {};
  for (const [name, text] of Object.entries(raw)) out[name] = parseProbability(text);
  return out;
}

/** The noisy report answer of `question` (an entry of the resolved survey's questions) for the
 * true answer `value` (an option label or index; for binary also yes/no, true/false, 1/0). */
export function randomize(question, value) {
  const p = params(question);
  if (question.type === "integer") {
    const offset = integerOffset(question, value);
    if (question.mechanism === "none") return question.min + offset;
    if (question.mechanism !== "onebit") {
      throw new Error(`${question.id}: this page cannot randomize ${question.mechanism}`);
    }
    // 1 with probability q* + (p* - q*) * offset / (max - min), as one exact fraction.
    const width = BigInt(question.max - question.min);
    const keep = p.keep;
    const num = (keep.den - keep.num) * width + (2n * keep.num - keep.den) * BigInt(offset);
    return flip({ num, den: keep.den * width }) ? 1 : 0;
  }
  if (question.type === "multi") {
    const chosen = selection(question, value);
    let bits = "";
    for (let i = 0; i < question.options.length; i += 1) {
      const selected = chosen.has(i);
      if (question.mechanism === "none") bits += selected ? "1" : "0";
      else if (question.mechanism === "rr") bits += flip(p.keep) === selected ? "1" : "0";
      else throw new Error(`${question.id}: this page cannot randomize ${question.mechanism}`);
    }
    return bits;
  }
  const index = optionIndex(question, value);
  switch (question.mechanism) {
    case "none": // a plain question: sent exactly as answered (the page says so)
      return index;
    case "rr":
      return flip(p.keep) ? index : 1 - index;
    case "coins":
      if (flip(p.truth)) return index;
      return flip(p.yes) ? 1 : 0;
    case "grr": {
      if (flip(p.keep)) return index;
      const other = Number(randomBelow(BigInt(question.options.length - 1)));
      return other < index ? other : other + 1;
    }
    case "oue": {
      let bits = "";
      for (let i = 0; i < question.options.length; i += 1) {
        bits += flip(i === index ? p.p : p.q) ? "1" : "0";
      }
      return bits;
    }
    default:
      throw new Error(`${question.id}: this page cannot randomize ${question.mechanism}`);
  }
}

// ---------------------------------------------------------------------------------------
// Canonical JSON (json.dumps(sort_keys=True, separators=(",", ":"), ensure_ascii=False))

function compareCodePoints(a, b) {
  const x = Array.from(a);
  const y = Array.from(b);
  for (let i = 0; i < Math.min(x.length, y.length); i += 1) {
    const d = x[i].codePointAt(0) - y[i].codePointAt(0);
    if (d !== 0) return d;
  }
  return x.length - y.length;
}

/** A number as Python writes it: integral numbers as integers, others as repr(float). */
export function pythonNumber(x) {
  if (!Number.isFinite(x)) throw new Error(`${x} is not JSON`);
  if (Number.isInteger(x) && Math.abs(x) < 1e16) return Object.is(x, -0) ? "0" : String(x);
  const [mantissa, exponentText] = x.toExponential().split("e");
  const exponent = Number(exponentText);
  const negative = mantissa.startsWith("-");
  const digits = mantissa.replace("-", "").replace(".", "");
  let text = null;
  if (exponent >= -4 && exponent < 16) {
    if (exponent < 0) {
      text = `0.${"0".repeat(-exponent - 1)}${digits}`;
    } else if (digits.length <= exponent + 1) {
      text = `${digits}${"0".repeat(exponent + 1 - digits.length)}.0`;
    } else {
      text = `${digits.slice(0, exponent + 1)}.${digits.slice(exponent + 1)}`;
    }
  }
  if (!text) {
    const body = digits.length > 1 ? `${digits[0]}.${digits.slice(1)}` : digits;
    const sign = exponent < 0 ? "-" : "+";
    text = `${body}e${sign}${String(Math.abs(exponent)).padStart(2, "0")}`;
  }
  return negative ? `-${text}` : text;
}

/** DESIGN's canonical JSON text of a value: keys sorted by code point, no spaces. */
export function canonicalJSON(value) {
  if (value === null || typeof value === "boolean") return JSON.stringify(value);
  if (typeof value === "number") return pythonNumber(value);
  if (typeof value === "string") return JSON.stringify(value);
  if (Array.isArray(value)) return `[${value.map(canonicalJSON).join(",")}]`;
  if (typeof value === "object") {
    const keys = Object.keys(value).sort(compareCodePoints);
    return `{${keys.map((k) => `${JSON.stringify(k)}:${canonicalJSON(value[k])}`).join(",")}}`;
  }
  throw new Error(`${typeof value} is not JSON`);
}

function hex(buffer) {
  return Array.from(new Uint8Array(buffer), (b) => b.toString(16).padStart(2, "0")).join("");
}

/** A promise of the sha256 hex of a survey's resolved form: its survey_hash. */
export async function surveyHash(resolved) {
  const bytes = new TextEncoder().encode(canonicalJSON(resolved));
  return hex(await crypto.subtle.digest("SHA-256", bytes));
}

// ---------------------------------------------------------------------------------------
// Keys and signatures (WebCrypto Ed25519; the private key never leaves the browser)

export function b64url(bytes) {
  let text = "";
  for (const byte of new Uint8Array(bytes)) text += String.fromCharCode(byte);
  return btoa(text).replaceAll("+", "-").replaceAll("/", "_").replace(/=+$/, "");
}

export function fromB64url(text) {
  const plain = atob(text.replaceAll("-", "+").replaceAll("_", "/"));
  return Uint8Array.from(plain, (c) => c.charCodeAt(0));
}

/** Whether this browser has what answering needs: Ed25519 in WebCrypto and IndexedDB. */
export async function supported() {
  if (!globalThis.crypto?.subtle || !globalThis.indexedDB) return false;
  try {
    await crypto.subtle.generateKey({ name: "Ed25519" }, false, ["sign", "verify"]);
    return true;
  } catch {
    return false;
  }
}

export async function newKeyPair() {
  const pair = await crypto.subtle.generateKey({ name: "Ed25519" }, false, ["sign", "verify"]);
  const raw = await crypto.subtle.exportKey("raw", pair.publicKey);
  return { privateKey: pair.privateKey, publicKey: b64url(raw) };
}

export async function signText(privateKey, text) {
  const bytes = new TextEncoder().encode(text);
  return b64url(await crypto.subtle.sign({ name: "Ed25519" }, privateKey, bytes));
}

/** The report's hour, as on the device: UTC truncated to the hour. */
export function sentAt(now = new Date()) {
  return `${now.toISOString().slice(0, 13)}:00:00Z`;
}

/** A signed report (DESIGN "Reports") of noisy `answers` with a key {privateKey, publicKey}. */
export async function signedReport(survey, hash, answers, key, { reportId, now } = {}) {
  const report = {
    v: 1,
    survey: survey.id,
    survey_hash: hash,
    answers,
    report_id: reportId || crypto.randomUUID(),
    sent_at: sentAt(now),
    public_key: key.publicKey,
  };
  return { ...report, signature: await signText(key.privateKey, canonicalJSON(report)) };
}

// ---------------------------------------------------------------------------------------
// The ledger and outbox (IndexedDB): written before anything is sent

const DB_NAME = "deniable";

function request(req) {
  return new Promise((resolve, reject) => {
    req.onsuccess = () => resolve(req.result);
    req.onerror = () => reject(req.error);
  });
}

function openLedger() {
  const req = indexedDB.open(DB_NAME, 1);
  req.onupgradeneeded = () => {
    req.result.createObjectStore("keys");
    req.result.createObjectStore("reports");
  };
  return request(req);
}

async function withStore(name, mode, work) {
  const db = await openLedger();
  try {
    const tx = db.transaction(name, mode);
    const done = new Promise((resolve, reject) => {
      tx.oncomplete = resolve;
      tx.onerror = () => reject(tx.error);
      tx.onabort = () => reject(tx.error);
    });
    const result = await work(tx.objectStore(name));
    await done;
    return result;
  } finally {
    db.close();
  }
}

/** The ledger's key of a survey on a server: one key pair and one report per pair. */
export function ledgerKey(server, surveyId) {
  return `${new URL(server).origin}|${surveyId}`;
}

export function keyFor(server, surveyId) {
  const id = ledgerKey(server, surveyId);
  return withStore("keys", "readonly", (s) => request(s.get(id))).then(async (found) => {
    if (found) return found;
    const fresh = await newKeyPair();
    // add, not put: two tabs racing keep the first key.
    try {
      await withStore("keys", "readwrite", (s) => request(s.add(fresh, id)));
      return fresh;
    } catch {
      return withStore("keys", "readonly", (s) => request(s.get(id)));
    }
  });
}

export function storedEntry(server, surveyId) {
  return withStore("reports", "readonly", (s) => request(s.get(ledgerKey(server, surveyId))));
}

export function saveEntry(server, surveyId, entry) {
  return withStore("reports", "readwrite", (s) => request(s.put(entry, ledgerKey(server, surveyId))));
}

/** Store a new entry only if none exists (never randomize a survey twice); the stored one. */
export async function addEntry(server, surveyId, entry) {
  try {
    await withStore("reports", "readwrite", (s) => request(s.add(entry, ledgerKey(server, surveyId))));
    return entry;
  } catch {
    return storedEntry(server, surveyId);
  }
}

export async function allEntries() {
  return withStore("reports", "readonly", (s) => request(s.getAll()));
}

/** The epsilon this browser has spent on every survey it answered (sequential composition). */
export async function epsilonSpent() {
  return (await allEntries()).reduce((sum, entry) => sum + (entry.epsilon || 0), 0);
}

// ---------------------------------------------------------------------------------------
// Talking to the aggregator

async function problemDetail(response) {
  try {
    const body = await response.json();
    return String(body.detail || body.reason || response.statusText).slice(0, 1000);
  } catch {
    return response.statusText || `HTTP ${response.status}`;
  }
}

export async function fetchSurvey(server, surveyId) {
  const response = await fetch(new URL(`/api/v1/surveys/${encodeURIComponent(surveyId)}`, server));
  if (!response.ok) throw new Error(await problemDetail(response));
  const body = await response.json();
  const computed = await surveyHash(body.survey);
  if (computed !== body.survey_hash) {
    throw new Error("the survey does not match its published hash; do not answer it");
  }
  return { survey: body.survey, hash: body.survey_hash };
}

/** Enroll this survey's key with an invitation code (invite-only surveys). */
export async function enroll(server, survey, hash, key, invitation) {
  const proof = canonicalJSON({
    purpose: "enroll",
    survey: survey.id,
    survey_hash: hash,
    public_key: key.publicKey,
    invitation,
  });
  const response = await fetch(
    new URL(`/api/v1/surveys/${encodeURIComponent(survey.id)}/enrollments`, server),
    {
      method: "POST",
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify({
        public_key: key.publicKey,
        invitation,
        signature: await signText(key.privateKey, proof),
      }),
    },
  );
  if (!response.ok) throw new Error(await problemDetail(response));
}

/** POST the entry's stored report; the entry with its new status (sent, duplicate, queued or
 * rejected), saved. A network failure leaves it queued for the next try. */
export async function send(server, entry) {
  let response;
  try {
    response = await fetch(new URL("/api/v1/reports", server), {
      method: "POST",
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify(entry.report),
    });
  } catch {
    return entry; // offline: stays queued
  }
  let updated;
  if (response.status === 201 || response.status === 200) {
    const body = await response.json();
    updated = { ...entry, status: body.result === "duplicate" ? "duplicate" : "accepted" };
  } else if ((response.headers.get("Content-Type") || "").startsWith("application/problem+json")) {
    updated = { ...entry, status: "rejected", reason: await problemDetail(response) };
  } else {
    return entry; // a proxy's or overloaded server's answer: try again later
  }
  await saveEntry(server, entry.report.survey, updated);
  return updated;
}

/** Send every queued report of this server again (on load and when the browser is online). */
export async function resendQueued(server) {
  const origin = new URL(server).origin;
  const sent = [];
  for (const entry of await allEntries()) {
    if (entry.status === "queued" && entry.server === origin) sent.push(await send(server, entry));
  }
  return sent;
}

/** Answer a survey: randomize every true answer, sign, store (before sending), send.
 * `truth` maps question ids to answers; returns the stored entry. Refuses to randomize a
 * survey twice, or to pass the epsilon cap. */
export async function answer(server, survey, hash, truth, { cap = 10, invitation = null } = {}) {
  const existing = await storedEntry(server, survey.id);
  if (existing) return existing;
  const spent = await epsilonSpent();
  if (spent + survey.epsilon > cap + 1e-9) {
    throw new Error(
      `answering would spend epsilon ${(spent + survey.epsilon).toFixed(2)}, over this ` +
        `browser's cap of ${cap}; nothing was sent`,
    );
  }
  if (survey.enrollment === "invite" && !invitation) {
    throw new Error(
      "This survey is by invitation only: open the link from your invitation (it carries " +
        "your code). Nothing was sent.",
    );
  }
  const key = await keyFor(server, survey.id);
  if (invitation) await enroll(server, survey, hash, key, invitation);
  const answers = {};
  for (const question of survey.questions) {
    if (!(question.id in truth)) throw new Error(`${question.id}: no answer given`);
    answers[question.id] = randomize(question, truth[question.id]);
  }
  const report = await signedReport(survey, hash, answers, key);
  const entry = {
    server: new URL(server).origin,
    report,
    epsilon: survey.epsilon,
    status: "queued",
    stored_at: new Date().toISOString(),
  };
  const stored = await addEntry(server, survey.id, entry);
  return send(server, stored);
}
