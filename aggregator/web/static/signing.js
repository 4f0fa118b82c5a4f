// Keys and signatures (WebCrypto Ed25519; the private key never leaves the browser): the signed
// report and the signed enrollment of an invitation (tests/conformance/signed_report.json).
import { b64url, canonicalJSON } from "./canonical.js";
import { isSplit, reportArms } from "./mechanisms.js";

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

/** A signed report (docs/wire-format.md) of noisy `answers` with a key {privateKey, publicKey}. */
export async function signedReport(survey, hash, answers, key, { reportId, now, arms } = {}) {
  const report = {
    v: 1,
    survey: survey.id,
    survey_hash: hash,
    answers,
    report_id: reportId || crypto.randomUUID(),
    sent_at: sentAt(now),
    public_key: key.publicKey,
  };
  if (isSplit(survey)) report.arms = reportArms(survey, answers, arms || {});
  return { ...report, signature: await signText(key.privateKey, canonicalJSON(report)) };
}

/** The signed body enrolling `key` in a survey with an invitation code (invite-only surveys). */
export async function enrollment(survey, hash, key, invitation) {
  const proof = canonicalJSON({
    purpose: "enroll",
    survey: survey.id,
    survey_hash: hash,
    public_key: key.publicKey,
    invitation,
  });
  const signature = await signText(key.privateKey, proof);
  return { survey: survey.id, body: { public_key: key.publicKey, invitation, signature } };
}
