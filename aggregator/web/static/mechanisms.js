// Question types and their mechanisms, the one place that knows them (as deniable.shared's
// survey, mechanisms, sketches, longitudinal and ballot): each type reads its true answer, each
// mechanism randomizes it from a byte source (probability.js) and says what a report holds.
import { flip, flips, parseProbability, randomBelow, secureBytes } from "./probability.js";
import { bloomBits, normalizeText, sketchColumn } from "./text.js";

// True answers, as each question type reads and checks them.

function optionIndex(question, value) {
  if (Number.isInteger(value) && value >= 0 && value < question.options.length) return value;
  const found = question.options.indexOf(value);
  if (found >= 0) return found;
  throw new Error(`${question.id}: ${JSON.stringify(value)} is not an answer`);
}

const YES = [true, 1, "1", "yes"];
const NO = [false, 0, "0", "no"];

function yesNoIndex(question, value) {
  if (YES.includes(value)) return 1;
  if (NO.includes(value)) return 0;
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

function textOf(question, value) {
  const text = normalizeText(typeof value === "string" ? value : "");
  if (!text || text.length > 200) {
    throw new Error(`${question.id}: ${JSON.stringify(value)} is not an answer; give a word or a phrase`);
  }
  return text;
}

// randomize(question, truth, p, bytes, raw) draws from `bytes` with the exact parameters `p`
// (sizes in `raw`); shown() says what a report holds (the receipt's words).

const half = (p) => ({ num: p.num, den: 2n * p.den });
const times = (a, b) => ({ num: a.num * b.num, den: a.den * b.den });
const plus = (a, b) => ({ num: a.num * b.den + b.num * a.den, den: a.den * b.den });
const minusFrom1 = (a) => ({ num: a.den - a.num, den: a.den });

/** A string of one 0/1 mark per option, option i marked when `marked(i)`. */
function marks(question, marked) {
  let bits = "";
  for (let i = 0; i < question.options.length; i += 1) bits += marked(i) ? "1" : "0";
  return bits;
}

const asOption = (question, sent) => `${sent} (${question.options[sent]})`;
const asNumber = (question, sent) => `${sent}`;
const asBit = (question, sent) => `${sent} (one bit)`;
const asSketch = (question, sent) => `${JSON.stringify(sent)} (a randomized sketch, never your words)`;

function asMarks(question, sent) {
  const picked = question.options.filter((_, i) => sent[i] === "1");
  return `${sent} (supports: ${picked.join(", ") || "none"})`;
}

/** GRR: `index` on heads of a coin `keep`, else another of the k options uniformly. */
function grrDraw(question, index, keep, bytes) {
  if (flip(keep, bytes)) return index;
  const other = randomBelow(question.options.length - 1, bytes);
  return other < index ? other : other + 1;
}

/** A row of coins as a string of 0/1 marks, 1 for heads. */
const bitRow = (ps, bytes) => flips(ps, bytes).map(Number).join("");
/** Unary encoding: option `index`'s coin `own`, the others' `other`. */
const unary = (question, index, own, other, bytes) =>
  bitRow(question.options.map((_, i) => (i === index ? own : other)), bytes);
/** Each option's mark `marked(i)` kept on heads of its coin `keep`, else flipped. */
function keptMarks(question, marked, keep, bytes) {
  const kept = flips(question.options.map(() => keep), bytes);
  return marks(question, (i) => kept[i] === marked(i));
}

/** A memo of k 0/1 marks (L-OSUE), or an option index below k (L-GRR). */
const isMarks = (question, memo) =>
  typeof memo === "string" && memo.length === question.options.length && /^[01]*$/.test(memo);
const isIndex = (question, memo) =>
  Number.isInteger(memo) && memo >= 0 && memo < question.options.length;

const MECHANISMS = {
  // Plain questions: sent exactly as answered (the page says so).
  plainOption: { randomize: (question, index) => index, shown: asOption },
  plainNumber: { randomize: (question, offset) => question.min + offset, shown: asNumber },
  plainSelection: {
    randomize: (question, chosen) => marks(question, (i) => chosen.has(i)),
    shown: asMarks,
  },
  rr: {
    randomize: (question, index, p, bytes) => (flip(p.keep, bytes) ? index : 1 - index),
    shown: asOption,
  },
  coins: {
    randomize: (question, index, p, bytes) => {
      if (flip(p.truth, bytes)) return index;
      return flip(p.yes, bytes) ? 1 : 0;
    },
    shown: asOption,
  },
  grr: {
    randomize: (question, index, p, bytes) => grrDraw(question, index, p.keep, bytes),
    shown: asOption,
  },
  oue: {
    randomize: (question, index, p, bytes) => unary(question, index, p.p, p.q, bytes),
    shown: asMarks,
  },
  onebit: {
    // 1 with probability q* + (p* - q*) * offset / (max - min), as one exact fraction.
    randomize: (question, offset, p, bytes) => {
      const width = BigInt(question.max - question.min);
      const keep = p.keep;
      const num = (keep.den - keep.num) * width + (2n * keep.num - keep.den) * BigInt(offset);
      return flip({ num, den: keep.den * width }, bytes) ? 1 : 0;
    },
    shown: asBit,
  },
  multiRR: {
    randomize: (question, chosen, p, bytes) => keptMarks(question, (i) => chosen.has(i), p.keep, bytes),
    shown: asMarks,
  },
  hcms: {
    randomize: (question, text, p, bytes, raw) => {
      const j = randomBelow(raw.k, bytes);
      const row = randomBelow(raw.m, bytes);
      let and = row & sketchColumn(j, text, raw.m);
      let parity = 0;
      for (; and; and &= and - 1) parity ^= 1;
      const bit = 1 - parity;
      return [j, row, flip(p.keep, bytes) ? bit : 1 - bit];
    },
    shown: asSketch,
  },
  cms: {
    randomize: (question, text, p, bytes, raw) => {
      const j = randomBelow(raw.k, bytes);
      const column = sketchColumn(j, text, raw.m);
      const other = minusFrom1(p.keep);
      return [j, bitRow(Array.from({ length: raw.m }, (_, i) => (i === column ? p.keep : other)), bytes)];
    },
    shown: asSketch,
  },
  // Memoized (waves): L-GRR is GRR twice (binary: k = 2); L-OSUE is OUE, then each mark kept
  // with p2 or flipped.
  "l-grr": {
    permanent: (question, index, p, bytes) => grrDraw(question, index, p.p1, bytes),
    instantaneous: (question, memo, p, bytes) => grrDraw(question, memo, p.p2, bytes),
    validMemo: isIndex,
    shown: asOption,
  },
  "l-osue": {
    permanent: (question, index, p, bytes) => unary(question, index, p.p1, p.q1, bytes),
    instantaneous: (question, memo, p, bytes) =>
      keptMarks(question, (i) => memo[i] === "1", p.p2, bytes),
    validMemo: isMarks,
    shown: asMarks,
  },
  rappor: {
    randomize: (question, text, p, bytes, raw) => {
      const cohort = randomBelow(raw.m, bytes);
      const bloom = bloomBits(cohort, text, raw.h, raw.k);
      // Per bit: P[1 | Bloom bit 1] = f/2 (p + q) + (1 - f) q; P[1 | 0] = f/2 (p + q) + (1 - f) p.
      const noise = times(half(p.f), plus(p.p, p.q));
      const setOne = plus(noise, times(minusFrom1(p.f), p.q));
      const unsetOne = plus(noise, times(minusFrom1(p.f), p.p));
      return [cohort, bitRow(Array.from({ length: raw.k }, (_, i) => (bloom.has(i) ? setOne : unsetOne)), bytes)];
    },
    shown: asSketch,
  },
};

// Asked in waves (docs/surveys.md#waves): a `permanent` response drawn once per true value (kept
// by memo.js), an `instantaneous` one from it in every wave; `randomize` draws both.

/** Whether a question of the resolved survey is memoized across waves (`longitudinal`). */
export function isLongitudinal(question) {
  if (!question?.longitudinal) return false;
  const found = own(questionType(question).mechanisms, question.mechanism);
  return typeof found?.permanent === "function";
}

function memoized(question) {
  if (!isLongitudinal(question)) throw new Error(`${question.id}: not asked in waves`);
  return mechanismOf(question);
}

/** The option index a longitudinal question reads from a true answer (the memo's key). */
export function trueIndex(question, value) {
  return questionType(question).truth(question, value);
}

/** The permanent response (the memo) of a longitudinal question for true option `index`. */
export function permanentResponse(question, index, { randomBytes = secureBytes } = {}) {
  return memoized(question).permanent(question, index, params(question), randomBytes);
}

/** Whether `memo` is a well-formed permanent response of `question`. */
export function validMemo(question, memo) {
  return memoized(question).validMemo(question, memo);
}

/** This wave's report answer: the permanent response randomized again with fresh coins. */
export function instantaneousResponse(question, memo, { randomBytes = secureBytes } = {}) {
  if (!validMemo(question, memo)) throw new Error(`${question.id}: a damaged permanent answer`);
  return memoized(question).instantaneous(question, memo, params(question), randomBytes);
}

// Question types: each reads a true answer (`truth`), names the form control the page asks it
// with (`control`), what its answer is in a skip-logic condition (`condition`, as
// QuestionType.condition_kind in Python) and maps the survey's mechanism names to the mechanisms above. A new type is
// one entry here (and, for a new kind of control, one reader in respond.js).

const QUESTION_TYPES = {
  binary: {
    truth: yesNoIndex,
    control: "choice",
    condition: "label",
    mechanisms: {
      none: MECHANISMS.plainOption,
      rr: MECHANISMS.rr,
      coins: MECHANISMS.coins,
      "l-grr": MECHANISMS["l-grr"],
    },
  },
  categorical: {
    truth: optionIndex,
    control: "choice",
    condition: "label",
    mechanisms: {
      none: MECHANISMS.plainOption,
      grr: MECHANISMS.grr,
      oue: MECHANISMS.oue,
      "l-grr": MECHANISMS["l-grr"],
      "l-osue": MECHANISMS["l-osue"],
    },
  },
  integer: {
    truth: integerOffset,
    control: "number",
    condition: "number",
    mechanisms: { none: MECHANISMS.plainNumber, onebit: MECHANISMS.onebit },
  },
  multi: {
    truth: selection,
    control: "boxes",
    condition: "set",
    mechanisms: { none: MECHANISMS.plainSelection, rr: MECHANISMS.multiRR },
  },
  text: {
    truth: textOf,
    control: "words",
    condition: null,
    mechanisms: { hcms: MECHANISMS.hcms, cms: MECHANISMS.cms, rappor: MECHANISMS.rappor },
  },
};

const own = (table, name) => (Object.hasOwn(table, name) ? table[name] : undefined);

/** The entry of QUESTION_TYPES for a question of the resolved survey. */
export function questionType(question) {
  const found = own(QUESTION_TYPES, question.type);
  if (!found) throw new Error(`${question.id}: this page cannot answer a ${question.type} question`);
  return found;
}

/** What a question's answer is in a condition ("label", "number", "set"; null: none). */
export function conditionKind(question) {
  return own(QUESTION_TYPES, question.type)?.condition ?? null;
}

function mechanismOf(question) {
  const found = own(questionType(question).mechanisms, question.mechanism);
  if (!found) throw new Error(`${question.id}: this page cannot randomize ${question.mechanism}`);
  return found;
}

function params(question) {
  const raw = question[question.mechanism] || {};
  const out = {};
  for (const [name, text] of Object.entries(raw)) {
    if (typeof text === "string") out[name] = parseProbability(text); // sizes stay numbers
  }
  return out;
}

/** The noisy report answer of `question` (of the resolved survey) for the true answer `value`
 * (an option label or index; for binary also yes/no, true/false, 1/0), from `randomBytes`. */
export function randomize(question, value, { randomBytes = secureBytes } = {}) {
  const truth = questionType(question).truth(question, value);
  const m = mechanismOf(question);
  const p = params(question);
  if (m.permanent) return m.instantaneous(question, m.permanent(question, truth, p, randomBytes), p, randomBytes);
  return m.randomize(question, truth, p, randomBytes, question[question.mechanism]);
}

/** The receipt's words for the report answer `sent` of `question`: the value and what it holds. */
export function shownAnswer(question, sent) {
  return mechanismOf(question).shown(question, sent);
}

// Split ballot (docs/surveys.md#split-ballot): a question with a `direct_share` is asked
// directly (sent as answered) with exactly that probability, drawn before it is shown.

const DIRECT = "direct";
/** What the page says beside a question drawn in the direct arm (shared/ballot.py's msgid). */
export const DIRECT_NOTICE =
  "This question is asked directly on this device: sent exactly as you answer.";

export function isSplit(survey) {
  return survey.questions.some((question) => question.direct_share != null);
}

/** A fresh arm for each split-ballot question, in survey order: "direct" on heads of a coin
 * of its share, else "randomized". */
export function drawArms(survey, { randomBytes = secureBytes } = {}) {
  const arms = {};
  for (const question of survey.questions) {
    if (question.direct_share == null) continue;
    arms[question.id] = flip(parseProbability(question.direct_share), randomBytes) ? DIRECT : "randomized";
  }
  return arms;
}

/** The question as asked in its arm: in the direct arm, its type's plain mechanism. */
export function inArm(question, arms) {
  if (arms[question.id] !== DIRECT) return question;
  return { ...question, mechanism: "none", epsilon: null };
}

/** The report's arms: one for each split-ballot question it answers (drawn if missing). */
export function reportArms(survey, answers, arms) {
  const out = {};
  for (const question of survey.questions) {
    if (question.direct_share == null || !Object.hasOwn(answers, question.id)) continue;
    if (!Object.hasOwn(arms, question.id)) throw new Error(`${question.id}: no arm drawn`);
    out[question.id] = arms[question.id];
  }
  return out;
}
