// Canonical JSON (docs/wire-format.md: Python's json.dumps(sort_keys=True, separators=(",",
// ":"), ensure_ascii=False)), the survey hash, and base64url (tests/conformance/canonical.json,
// survey_hashes.json).

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

export function b64url(bytes) {
  let text = "";
  for (const byte of new Uint8Array(bytes)) text += String.fromCharCode(byte);
  return btoa(text).replaceAll("+", "-").replaceAll("/", "_").replace(/=+$/, "");
}

export function fromB64url(text) {
  const plain = atob(text.replaceAll("-", "+").replaceAll("_", "/"));
  return Uint8Array.from(plain, (c) => c.charCodeAt(0));
}
