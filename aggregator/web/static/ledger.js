// The ledger and outbox (IndexedDB), written before anything is sent. A personal browser keeps
// one key and one entry per survey (its receipt and the epsilon it spent); a shared device
// (docs/fieldwork.md) keeps one entry per respondent, only until the aggregator has it.
import { newKeyPair } from "./signing.js";

const DB_NAME = "deniable";

/** An IndexedDB request as a promise of its result. */
export function request(req) {
  return new Promise((resolve, reject) => {
    req.onsuccess = () => resolve(req.result);
    req.onerror = () => reject(req.error);
  });
}

/** Opens IndexedDB database `dbName` (version 1), creating its object `stores` on first use. */
function openDatabase(dbName, stores) {
  const req = indexedDB.open(dbName, 1);
  req.onupgradeneeded = () => {
    for (const store of stores) req.result.createObjectStore(store);
  };
  return request(req);
}

/** Runs `work` on object store `name` of database `dbName` in one transaction; resolves once
 * it completes, and closes the database. */
export async function withObjectStore(dbName, stores, name, mode, work) {
  const db = await openDatabase(dbName, stores);
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

const withStore = (name, mode, work) =>
  withObjectStore(DB_NAME, ["keys", "reports"], name, mode, work);

/** The ledger's key of a survey on a server: one key pair and one report per pair. */
export function ledgerKey(server, surveyId) {
  return `${new URL(server).origin}|${surveyId}`;
}

/** The survey an entry belongs to (a shared-device entry keeps it after its report is gone). */
const surveyOf = (entry) => entry.survey ?? entry.report?.survey;

/** Where an entry is stored: the survey's one entry, or a shared-device respondent's own. */
function entryKey(entry) {
  const key = ledgerKey(entry.server, surveyOf(entry));
  return entry.shared ? `${key}|${entry.report_id}` : key;
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

/** Store an entry under its own key (a shared-device entry, or the survey's one entry). */
export function putEntry(entry) {
  return withStore("reports", "readwrite", (s) => request(s.put(entry, entryKey(entry))));
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

/** The epsilon this browser's own respondent has spent on every survey it answered
 * (sequential composition); a shared device's respondents are other people and spend none. */
export async function epsilonSpent() {
  return (await allEntries()).reduce((sum, entry) => sum + (entry.shared ? 0 : entry.epsilon || 0), 0);
}

/** The reports of a survey on this device: {waiting, sent} (queued; accepted or duplicate). */
export async function outboxCounts(server, surveyId) {
  const origin = new URL(server).origin;
  const counts = { waiting: 0, sent: 0 };
  for (const entry of await allEntries()) {
    if (entry.server !== origin || surveyOf(entry) !== surveyId) continue;
    if (entry.status === "queued") counts.waiting += 1;
    if (entry.status === "accepted" || entry.status === "duplicate") counts.sent += 1;
  }
  return counts;
}
