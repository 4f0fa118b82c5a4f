// The page's memo of permanent responses (docs/surveys.md#waves), as deniable.client.memo: a
// question repeated across the waves of a series is randomized once per true value into a
// permanent response, kept here, and that response is randomized again (deniable.js) in every
// wave. The memo lives in this origin's IndexedDB ("deniable-memo"), apart from the ledger.
// It never holds the true value as a field: a row is keyed by an HMAC-SHA-256 (WebCrypto) of
// (aggregator, series, question, its parameters, true value) under a random key drawn once
// per browser and kept non-extractable, and holds only the permanent response and the
// epsilon_perm it charged. A true value's first report charges epsilon_perm; later waves with
// the same value charge nothing (docs/respondents.md).
import {
  canonicalJSON,
  instantaneousResponse,
  isLongitudinal,
  permanentResponse,
  request,
  trueIndex,
  validMemo,
  withObjectStore,
} from "./deniable.js";

const DB_NAME = "deniable-memo";

async function withStore(name, mode, work) {
  try {
    return await withObjectStore(DB_NAME, ["secret", "memo"], name, mode, work);
  } catch (error) {
    if (error?.name === "ConstraintError") return undefined; // `add` lost a race: read again
    throw error;
  }
}

/** This browser's memo key (HMAC-SHA-256, non-extractable), drawn on first use. */
async function secretKey() {
  const found = await withStore("secret", "readonly", (s) => request(s.get("hmac")));
  if (found) return found;
  const fresh = await crypto.subtle.generateKey({ name: "HMAC", hash: "SHA-256" }, false, ["sign"]);
  await withStore("secret", "readwrite", (s) => request(s.add(fresh, "hmac"))); // first one wins
  return withStore("secret", "readonly", (s) => request(s.get("hmac")));
}

/** The row key of (aggregator, series, question, true option index): an HMAC, so that the
 * true value is no field of the memo. The question's parameters are part of it: a wave that
 * changes them draws (and charges) afresh. */
export async function memoKey(key, server, series, question, index) {
  const message = canonicalJSON({
    server: new URL(server).origin,
    series,
    params: {
      question: question.id,
      type: question.type,
      options: question.options,
      mechanism: question.mechanism,
      longitudinal: question.longitudinal,
    },
    truth: index,
  });
  const mac = await crypto.subtle.sign("HMAC", key, new TextEncoder().encode(message));
  return Array.from(new Uint8Array(mac), (b) => b.toString(16).padStart(2, "0")).join("");
}

function repeatedQuestions(survey, ids) {
  if (!survey.series) throw new Error(`survey ${survey.id}: questions asked in waves need a series`);
  return ids.map((id) => {
    const question = survey.questions.find((q) => q.id === id);
    if (!question || !isLongitudinal(question)) throw new Error(`${id}: not asked in waves`);
    return question;
  });
}

async function rowsOf(server, survey, truth, ids) {
  const key = await secretKey();
  const out = [];
  for (const question of repeatedQuestions(survey, ids)) {
    const index = trueIndex(question, truth[question.id]);
    const id = await memoKey(key, server, survey.series, question, index);
    out.push({ question, index, id });
  }
  return out;
}

const getRow = (id) => withStore("memo", "readonly", (s) => request(s.get(id)));

/** What answering the longitudinal questions `ids` with `truth` would charge, nothing drawn:
 * epsilon_perm for each true value with no permanent response yet. */
export async function charge(server, survey, truth, ids) {
  let total = 0;
  for (const { question, id } of await rowsOf(server, survey, truth, ids)) {
    if (!(await getRow(id))) total += question.epsilon;
  }
  return total;
}

/** This wave's answers of the longitudinal questions `ids`: each true value's permanent
 * response (drawn and kept now if it has none) randomized again. {answers, epsilon (what the
 * responses drawn now charge), fresh (their question ids)}. */
export async function draw(server, survey, truth, ids) {
  const answers = {};
  const fresh = [];
  let epsilon = 0;
  for (const { question, index, id } of await rowsOf(server, survey, truth, ids)) {
    let row = await getRow(id);
    if (!row) {
      const made = {
        permanent: permanentResponse(question, index),
        epsilon_perm: question.epsilon,
        created_at: new Date().toISOString(),
      };
      // add, not put: another tab drawing at once keeps the first response, and charges it.
      await withStore("memo", "readwrite", (s) => request(s.add(made, id)));
      row = await getRow(id);
      if (row && row.created_at === made.created_at && row.permanent === made.permanent) {
        epsilon += question.epsilon;
        fresh.push(question.id);
      }
    }
    if (!row || !validMemo(question, row.permanent)) {
      throw new Error(`${question.id}: this browser's memo holds a damaged permanent answer`);
    }
    answers[question.id] = instantaneousResponse(question, row.permanent);
  }
  return { answers, epsilon, fresh };
}

/** How many permanent responses this browser keeps. */
export function memoSize() {
  return withStore("memo", "readonly", (s) => request(s.count()));
}
