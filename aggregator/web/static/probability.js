// Exact probabilities and the draws every randomizer makes, from a byte source as Python draws
// them (docs/randomness.md): randomBytes(n) gives the next n bytes, crypto.getRandomValues by
// default; never Math.random.

// A probability's text, the grammar of Python's PROBABILITY_TEXT (deniable.shared.probability).
const PROBABILITY_TEXT = /^(?:([0-9]{1,18})(?:\.([0-9]{0,18}))?|\.([0-9]{1,18})|([0-9]{1,18})\/([0-9]{1,18}))$/;
// What may surround it, PROBABILITY_SPACE's ASCII white space (String.trim drops more).
const PROBABILITY_SPACE = /^[ \t\n\r\f\v]+|[ \t\n\r\f\v]+$/g;

/** An exact probability {num, den} (BigInt) from the resolved form's text ("0.8", "2/3"). */
export function parseProbability(text) {
  const m = PROBABILITY_TEXT.exec(String(text).replace(PROBABILITY_SPACE, ""));
  if (!m) throw new Error(`not a probability: ${text}`);
  const digits = m[2] ?? m[3] ?? "";
  const [num, den] = m[4] !== undefined
    ? [BigInt(m[4]), BigInt(m[5])]
    : [BigInt((m[1] ?? "0") + digits), 10n ** BigInt(digits.length)];
  if (den === 0n || num > den) throw new Error(`not a probability: ${text}`);
  return { num, den };
}

export function secureBytes(n) {
  const out = new Uint8Array(n);
  for (let i = 0; i < n; i += 65536) crypto.getRandomValues(out.subarray(i, i + 65536));
  return out;
}

function read(randomBytes, n) {
  const got = randomBytes(n);
  if (got?.length !== n) throw new Error(`the byte source gave ${got?.length} bytes, not ${n}`);
  return got;
}

/** A uniform integer in [0, n), by rejection sampling. */
export function randomBelow(n, randomBytes = secureBytes) {
  if (!Number.isSafeInteger(n) || n < 1 || n > 2 ** 48) throw new Error(`no integer below ${n}`);
  if (n === 1) return 0;
  const k = (n - 1).toString(2).length;
  for (;;) {
    let x = 0;
    for (const byte of read(randomBytes, Math.ceil(k / 8))) x = x * 256 + byte;
    x %= 2 ** k;
    if (x < n) return x;
  }
}

/** A row of coins, each true with probability exactly p ({num, den}): a byte each compared
 * with p's first base-256 digit, then each tie settled in order by further bytes. */
export function flips(ps, randomBytes = secureBytes) {
  const bytes = read(randomBytes, ps.length);
  const first = new Map();
  return ps.map((p, i) => {
    if (!first.has(p)) first.set(p, Number((p.num * 256n) / p.den));
    let [d, b] = [first.get(p), bytes[i]];
    for (let r = p.num; b === d; b = read(randomBytes, 1)[0]) {
      r = (r * 256n) % p.den;
      d = Number((r * 256n) / p.den);
    }
    return b < d;
  });
}

/** One coin: true with probability exactly p. */
export const flip = (p, randomBytes = secureBytes) => flips([p], randomBytes)[0];
