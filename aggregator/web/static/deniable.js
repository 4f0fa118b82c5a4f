// deniable's protocol in the browser: the same randomization, canonical JSON, survey hash,
// keys, signatures and local ledger as the Python client (deniable.client), on web platform
// APIs only (WebCrypto, IndexedDB, crypto.getRandomValues). The true answers never leave the
// device: only the randomized report is stored and sent.

// ---------------------------------------------------------------------------------------
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
// Text answers (as deniable.shared.text and deniable.shared.sketches)

// The white space Python's str.split() knows (str.isspace), which JavaScript's \s differs from.
const PY_SPACE = /[\t\n\v\f\r\x1c-\x1f \x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]+/u;

/** Normalization (docs/surveys.md): NFKC, white space runs made one space, trimmed, lower case. */
export function normalizeText(text) {
  return String(text)
    .normalize("NFKC")
    .split(PY_SPACE)
    .filter((part) => part !== "")
    .join(" ")
    .toLowerCase();
}

const K256 = new Uint32Array([
  0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
  0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
  0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
  0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
  0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
  0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
  0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
  0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
]);

/** SHA-256 of bytes, synchronously (WebCrypto's digest is asynchronous; randomize is not). */
export function sha256(bytes) {
  const length = bytes.length;
  const padded = new Uint8Array((((length + 9 + 63) >> 6) << 6));
  padded.set(bytes);
  padded[length] = 0x80;
  const view = new DataView(padded.buffer);
  view.setUint32(padded.length - 8, Math.floor(length / 0x20000000));
  view.setUint32(padded.length - 4, (length << 3) >>> 0);
  const h = new Uint32Array([
    0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19,
  ]);
  const w = new Uint32Array(64);
  const rotr = (x, n) => (x >>> n) | (x << (32 - n));
  for (let offset = 0; offset < padded.length; offset += 64) {
    for (let i = 0; i < 16; i += 1) w[i] = view.getUint32(offset + 4 * i);
    for (let i = 16; i < 64; i += 1) {
      const s0 = rotr(w[i - 15], 7) ^ rotr(w[i - 15], 18) ^ (w[i - 15] >>> 3);
      const s1 = rotr(w[i - 2], 17) ^ rotr(w[i - 2], 19) ^ (w[i - 2] >>> 10);
      w[i] = (w[i - 16] + s0 + w[i - 7] + s1) >>> 0;
    }
    let [a, b, c, d, e, f, g, k] = h;
    for (let i = 0; i < 64; i += 1) {
      const t1 = (k + (rotr(e, 6) ^ rotr(e, 11) ^ rotr(e, 25)) + ((e & f) ^ (~e & g)) + K256[i] + w[i]) >>> 0;
      const t2 = ((rotr(a, 2) ^ rotr(a, 13) ^ rotr(a, 22)) + ((a & b) ^ (a & c) ^ (b & c))) >>> 0;
      k = g;
      g = f;
      f = e;
      e = (d + t1) >>> 0;
      d = c;
      c = b;
      b = a;
      a = (t1 + t2) >>> 0;
    }
    h[0] += a;
    h[1] += b;
    h[2] += c;
    h[3] += d;
    h[4] += e;
    h[5] += f;
    h[6] += g;
    h[7] += k;
  }
  const out = new Uint8Array(32);
  const outView = new DataView(out.buffer);
  h.forEach((word, i) => outView.setUint32(4 * i, word));
  return out;
}

/** H(s): the first 8 bytes of sha256(s as UTF-8), big-endian, as a BigInt. */
export function textHash(text) {
  const digest = sha256(new TextEncoder().encode(text));
  let value = 0n;
  for (let i = 0; i < 8; i += 1) value = (value << 8n) | BigInt(digest[i]);
  return value;
}

/** The column of text under hash function j of an m-column count-mean sketch. */
export function sketchColumn(j, text, m) {
  return Number(textHash(`${j}:${text}`) % BigInt(m));
}

/** RAPPOR's Bloom bits of text in a cohort: H(c:i:text) mod k for i < h. */
export function bloomBits(cohort, text, hashes, bits) {
  const out = new Set();
  for (let i = 0; i < hashes; i += 1) out.add(Number(textHash(`${cohort}:${i}:${text}`) % BigInt(bits)));
  return out;
}

// ---------------------------------------------------------------------------------------
// True answers: each question type reads and checks its own (as deniable.shared.survey)

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

// ---------------------------------------------------------------------------------------
// Mechanisms (as deniable.shared.mechanisms and deniable.shared.sketches): each randomizes a
// true answer as its question type reads it, with the survey's exact parameters `p` (sizes in
// `raw`), and says in a few words what a report it made holds (the receipt's words).

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

/** GRR with keep probability `keep`: `index` kept, else another of k options uniformly. */
function grrDraw(k, index, keep) {
  if (flip(keep)) return index;
  const other = Number(randomBelow(BigInt(k - 1)));
  return other < index ? other : other + 1;
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
  rr: { randomize: (question, index, p) => (flip(p.keep) ? index : 1 - index), shown: asOption },
  coins: {
    randomize: (question, index, p) => {
      if (flip(p.truth)) return index;
      return flip(p.yes) ? 1 : 0;
    },
    shown: asOption,
  },
  grr: {
    randomize: (question, index, p) => {
      if (flip(p.keep)) return index;
      const other = Number(randomBelow(BigInt(question.options.length - 1)));
      return other < index ? other : other + 1;
    },
    shown: asOption,
  },
  oue: {
    randomize: (question, index, p) => marks(question, (i) => flip(i === index ? p.p : p.q)),
    shown: asMarks,
  },
  onebit: {
    // 1 with probability q* + (p* - q*) * offset / (max - min), as one exact fraction.
    randomize: (question, offset, p) => {
      const width = BigInt(question.max - question.min);
      const keep = p.keep;
      const num = (keep.den - keep.num) * width + (2n * keep.num - keep.den) * BigInt(offset);
      return flip({ num, den: keep.den * width }) ? 1 : 0;
    },
    shown: asBit,
  },
  multiRR: {
    // Each option's mark on its own coin: kept with probability keep.
    randomize: (question, chosen, p) => marks(question, (i) => flip(p.keep) === chosen.has(i)),
    shown: asMarks,
  },
  hcms: {
    randomize: (question, text, p, raw) => {
      const j = Number(randomBelow(BigInt(raw.k)));
      const row = Number(randomBelow(BigInt(raw.m)));
      let and = row & sketchColumn(j, text, raw.m);
      let parity = 0;
      for (; and; and &= and - 1) parity ^= 1;
      const bit = 1 - parity;
      return [j, row, flip(p.keep) ? bit : 1 - bit];
    },
    shown: asSketch,
  },
  cms: {
    randomize: (question, text, p, raw) => {
      const j = Number(randomBelow(BigInt(raw.k)));
      const column = sketchColumn(j, text, raw.m);
      const other = minusFrom1(p.keep);
      let bits = "";
      for (let i = 0; i < raw.m; i += 1) bits += flip(i === column ? p.keep : other) ? "1" : "0";
      return [j, bits];
    },
    shown: asSketch,
  },
  // Memoized (waves): L-GRR is GRR twice (binary: k = 2); L-OSUE is OUE, then each mark kept
  // with p2 or flipped. `randomize` is both rounds at once (one report without a memo).
  "l-grr": {
    permanent: (question, index, p) => grrDraw(question.options.length, index, p.p1),
    instantaneous: (question, memo, p) => grrDraw(question.options.length, memo, p.p2),
    validMemo: isIndex,
    randomize: (question, index, p) => {
      const k = question.options.length;
      return grrDraw(k, grrDraw(k, index, p.p1), p.p2);
    },
    shown: asOption,
  },
  "l-osue": {
    permanent: (question, index, p) => marks(question, (i) => flip(i === index ? p.p1 : p.q1)),
    instantaneous: (question, memo, p) => marks(question, (i) => flip(p.p2) === (memo[i] === "1")),
    validMemo: isMarks,
    randomize: (question, index, p) => {
      const memo = marks(question, (i) => flip(i === index ? p.p1 : p.q1));
      return marks(question, (i) => flip(p.p2) === (memo[i] === "1"));
    },
    shown: asMarks,
  },
  rappor: {
    randomize: (question, text, p, raw) => {
      const cohort = Number(randomBelow(BigInt(raw.m)));
      const bloom = bloomBits(cohort, text, raw.h, raw.k);
      // Per bit: P[1 | Bloom bit 1] = f/2 (p + q) + (1 - f) q; P[1 | 0] = f/2 (p + q) + (1 - f) p.
      const noise = times(half(p.f), plus(p.p, p.q));
      const setOne = plus(noise, times(minusFrom1(p.f), p.q));
      const unsetOne = plus(noise, times(minusFrom1(p.f), p.p));
      let bits = "";
      for (let i = 0; i < raw.k; i += 1) bits += flip(bloom.has(i) ? setOne : unsetOne) ? "1" : "0";
      return [cohort, bits];
    },
    shown: asSketch,
  },
};

// ---------------------------------------------------------------------------------------
// Memoized randomization (as deniable.shared.longitudinal; docs/surveys.md#waves): a question
// asked again in the waves of a series is randomized in two rounds by its mechanism's
// `permanent` (p1, q1: drawn once per true value, kept by memo.js) and `instantaneous` (p2,
// q2: the memo randomized again in every wave); `randomize` is both at once.

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

/** The permanent response of a longitudinal question for true option `index` (the memo,
 * kept by memo.js in place of the true value): an option index, or a string of 0/1 marks. */
export function permanentResponse(question, index) {
  return memoized(question).permanent(question, index, params(question));
}

/** Whether `memo` is a well-formed permanent response of `question` (read back from storage). */
export function validMemo(question, memo) {
  return memoized(question).validMemo(question, memo);
}

/** This wave's report answer: the permanent response randomized again with fresh coins. */
export function instantaneousResponse(question, memo) {
  if (!validMemo(question, memo)) throw new Error(`${question.id}: a damaged permanent answer`);
  return memoized(question).instantaneous(question, memo, params(question));
}

// ---------------------------------------------------------------------------------------
// Question types: the one place that knows them. Each reads and checks a true answer (`truth`),
// names the form control the page asks it with (`control`), and maps the survey's mechanism
// names to the mechanisms above. A new question type is one entry here (and, for a new kind
// of control, one reader in respond.js).

const QUESTION_TYPES = {
  binary: {
    truth: yesNoIndex,
    control: "choice",
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
    mechanisms: { none: MECHANISMS.plainNumber, onebit: MECHANISMS.onebit },
  },
  multi: {
    truth: selection,
    control: "boxes",
    mechanisms: { none: MECHANISMS.plainSelection, rr: MECHANISMS.multiRR },
  },
  text: {
    truth: textOf,
    control: "words",
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

/** The noisy report answer of `question` (an entry of the resolved survey's questions) for the
 * true answer `value` (an option label or index; for binary also yes/no, true/false, 1/0). */
export function randomize(question, value) {
  const truth = questionType(question).truth(question, value);
  const mechanism = mechanismOf(question);
  return mechanism.randomize(question, truth, params(question), question[question.mechanism]);
}

/** The receipt's words for the report answer `sent` of `question`: the value and what it holds. */
export function shownAnswer(question, sent) {
  return mechanismOf(question).shown(question, sent);
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

/** docs/wire-format.md's canonical JSON text of a value: keys sorted by code point, no spaces. */
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

// ---------------------------------------------------------------------------------------
// The ledger and outbox (IndexedDB): written before anything is sent. A personal browser keeps
// one key and one entry per survey (its receipt and the epsilon it spent); a shared device
// (docs/fieldwork.md) keeps one entry per respondent, only until the aggregator has it.

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
function putEntry(entry) {
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

// ---------------------------------------------------------------------------------------
// The delivery policy (as deniable.client.delivery; tests/conformance/delivery.json): a 2xx
// naming the report gives its result; 408, 425, 429, 5xx and anything but the aggregator's own
// problem+json leave it queued, sent again after Retry-After (at most a day) or a backoff;
// any other 4xx problem+json rejects it with its detail.

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

/** The entry after a delivery: its outcome and reason; if queued, when to try again
 * (`retry_at`, ms): Retry-After if the server gave one (a `firm` time), else a doubling backoff.
 * A shared-device entry the aggregator has settled keeps no report (nor its enrollment): only
 * its status, for the page's counts. */
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

/** POST one body to the report endpoint; the answer's parts the policy reads (a redirect is
 * no answer, as for the Python client, and hides its status), or null if none came. */
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

/** Deliveries of `entries` (each with its report), sent in batches of BATCH_SIZE (one alone
 * as itself); a batch refused as a whole (a 4xx problem, say too large) is sent one by one. */
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
const routeOf = (survey) => (survey.relay ? { relay: survey.relay, ohttp_keys: survey.ohttp_keys } : {});

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
async function sendEnrollment(server, entry) {
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
 * service worker take turns: a report read as queued in one turn is settled before the next). */
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

/** POST the entry's stored report; the entry with its new status (accepted, duplicate, queued
 * or rejected) by the delivery policy, saved. A network failure leaves it queued too. */
export async function send(server, entry) {
  const [updated] = await withOutboxLock(() => sendEntries(server, [entry]));
  return updated;
}

/** The least time between two tries of a report when `eager` skips its backoff (ms): the
 * page's `online` handler and the worker's Background Sync, both woken by the network coming
 * back, do not both hit a busy aggregator. */
const EAGER_GAP = 5_000;

/** Whether a queued entry is due: its time has come, or (`eager`: the page opened, the network
 * came back) it waits on a backoff rather than on a firm time, and either found no network
 * last time or was last tried a while ago. */
function due(entry, eager, now) {
  if (!entry.retry_at || entry.retry_at <= now) return true;
  const rested = entry.unreachable || !entry.tried_at || now - entry.tried_at >= EAGER_GAP;
  return eager && !entry.firm && rested;
}

/** Send the queued reports that are due again, of this server (`server` null: of every
 * server), batched, one sender at a time; every queued entry, as it is now. */
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

/** The ids of the questions a report holds: `asked` (the questions the respondent was asked,
 * in the survey's order) or, without it, every question. */
function askedIds(survey, asked) {
  if (asked == null) return survey.questions.map((question) => question.id);
  const wanted = new Set(asked);
  return survey.questions.filter((question) => wanted.has(question.id)).map((q) => q.id);
}

/** The epsilon a report holding the questions `asked` spends: the sum over its randomized
 * questions (a plain question spends none). Every question when `asked` is not given. */
export function reportEpsilon(survey, asked = null, arms = {}) {
  const ids = new Set(askedIds(survey, asked));
  return survey.questions
    .filter((question) => ids.has(question.id) && typeof question.epsilon === "number")
    .filter((question) => arms[question.id] !== DIRECT) // a direct arm is sent as answered
    .reduce((sum, question) => sum + question.epsilon, 0);
}

// ---------------------------------------------------------------------------------------
// Split ballot (docs/surveys.md#split-ballot): a randomized question with a `direct_share` is
// asked directly, sent exactly as answered, with probability exactly that share; the arm is
// drawn on this device before the question is shown and carried in the report's `arms`.

const DIRECT = "direct";
/** What the page says beside a question drawn in the direct arm (shared/ballot.py's msgid). */
export const DIRECT_NOTICE =
  "This question is asked directly on this device: sent exactly as you answer.";

function isSplit(survey) {
  return survey.questions.some((question) => question.direct_share != null);
}

/** A fresh arm for each split-ballot question: "direct" with probability exactly its share
 * (crypto.getRandomValues and an integer comparison, as every coin here), else "randomized". */
export function drawArms(survey) {
  const arms = {};
  for (const question of survey.questions) {
    if (question.direct_share == null) continue;
    arms[question.id] = flip(parseProbability(question.direct_share)) ? DIRECT : "randomized";
  }
  return arms;
}

/** The question as asked in its arm: in the direct arm, its type's plain mechanism. */
export function inArm(question, arms) {
  if (arms[question.id] !== DIRECT) return question;
  return { ...question, mechanism: "none", epsilon: null };
}

/** The report's arms: one for each split-ballot question it answers (drawn if missing). */
function reportArms(survey, answers, arms) {
  const out = {};
  for (const question of survey.questions) {
    if (question.direct_share == null || !Object.hasOwn(answers, question.id)) continue;
    if (!Object.hasOwn(arms, question.id)) throw new Error(`${question.id}: no arm drawn`);
    out[question.id] = arms[question.id];
  }
  return out;
}

/** The report's answers: exactly the questions asked, each randomized once. */
function randomizeAll(survey, truth, asked = null, arms = {}) {
  const answers = {};
  for (const id of askedIds(survey, asked)) {
    if (!Object.hasOwn(truth, id)) throw new Error(`${id}: no answer given`);
    const question = survey.questions.find((q) => q.id === id);
    answers[id] = randomize(inArm(question, arms), truth[id]);
  }
  return answers;
}

/** Answer a survey: randomize every true answer of the questions `asked` (the relevant ones,
 * docs/surveys.md; all by default), sign, store (before sending), send. `truth` maps question
 * ids to answers; returns the stored entry, whose `epsilon` is what this report spends.
 * Refuses to randomize a survey twice, or to pass the epsilon cap. A survey with longitudinal
 * questions needs `memo` (memo.js: {charge, draw}), which keeps each true value's permanent
 * response and charges its epsilon_perm once; one answer at a time per browser (a Web Lock). */
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

/** Answer for one respondent of a shared device: a fresh key, used for this report (and its
 * enrollment) and then dropped, never stored; the entry is kept only until the aggregator has
 * the report, and this browser's epsilon ledger is not charged. An invitation code the
 * aggregator refuses sends nothing; one it cannot check now (offline) waits with the report,
 * and is sent before it. Returns the entry as it is after the first try to send. */
export async function answerShared(
  server,
  survey,
  hash,
  truth,
  { invitation = null, asked = null, arms = null } = {},
) {
  arms = arms || drawArms(survey); // a fresh draw per respondent
  if (survey.questions.some(isLongitudinal)) {
    // A memo on a shared device would mix everyone's permanent answers (memo.js).
    throw new Error("a survey asked in waves cannot be answered on a shared device");
  }
  if (survey.enrollment === "invite" && !invitation) {
    throw new Error(
      t("This survey is by invitation only: type the respondent's invitation code. Nothing was sent."),
    );
  }
  const key = await newKeyPair();
  let enrolled = invitation ? await enrollment(survey, hash, key, invitation) : null;
  if (enrolled) {
    const refused = await sendEnrollment(server, { enrollment: enrolled });
    if (refused?.outcome === "rejected") {
      const reason = refused.reason.replace(/^enrollment: /, "");
      throw new Error(t("{reason}. Nothing was sent.", { reason }));
    }
    if (!refused) enrolled = null;
  }
  const noisy = randomizeAll(survey, truth, asked, arms);
  const report = await signedReport(survey, hash, noisy, key, { arms });
  const entry = {
    server: new URL(server).origin,
    survey: survey.id,
    report_id: report.report_id,
    shared: true,
    ...routeOf(survey),
    report,
    status: "queued",
    stored_at: new Date().toISOString(),
    retry_at: Date.now() + 60_000, // being sent now: no retry round sends it meanwhile
    firm: true,
  };
  if (enrolled) entry.enrollment = enrolled;
  await putEntry(entry);
  return send(server, entry);
}
