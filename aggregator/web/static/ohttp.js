// Oblivious HTTP (RFC 9458) for the respondent page: a report sent through the survey's relay,
// sealed to the aggregator's key, so the relay sees who sends but not what and the aggregator
// what but not who (docs/anonymity.md). HPKE (RFC 9180) base mode in deniable's one suite,
// DHKEM(X25519, HKDF-SHA256), HKDF-SHA256, AES-128-GCM, on WebCrypto: X25519, AES-GCM, and
// HKDF's Extract and Expand over HMAC-SHA256 (WebCrypto's HKDF does not give them apart).
// Binary HTTP (RFC 9292) known-length messages inside. The Python side is shared/ohttp.py and
// shared/bhttp.py; both are held to the RFCs' vectors in tests/conformance/ohttp.json.

const enc = new TextEncoder();
const KEM_ID = 0x0020;
const KDF_ID = 0x0001;
const AEAD_ID = 0x0001;
const NK = 16;
const NN = 12;
const NPK = 32;
export const REQUEST_TYPE = "message/ohttp-req";
export const RESPONSE_TYPE = "message/ohttp-res";

/** Bytes joined into one Uint8Array. */
export function concat(...parts) {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const part of parts) {
    out.set(part, at);
    at += part.length;
  }
  return out;
}

const u16 = (n) => new Uint8Array([n >> 8, n & 0xff]);

// ---------------------------------------------------------------------------------------
// Binary HTTP, known-length (RFC 9292)

/** A QUIC variable-length integer, in its shortest form. */
export function varint(n) {
  if (n < 0x40) return new Uint8Array([n]);
  if (n < 0x4000) return new Uint8Array([0x40 | (n >> 8), n & 0xff]);
  if (n < 0x40000000) return new Uint8Array([0x80 | (n >>> 24), (n >> 16) & 0xff, (n >> 8) & 0xff, n & 0xff]);
  throw new Error("too large for this encoder");
}

const lengthPrefixed = (bytes) => concat(varint(bytes.length), bytes);
const fieldSection = (fields) =>
  lengthPrefixed(concat(...fields.map(([n, v]) => concat(lengthPrefixed(enc.encode(n.toLowerCase())), lengthPrefixed(enc.encode(v))))));

/** A known-length Binary HTTP request: {method, scheme, authority, path, headers, content}. */
export function encodeRequest({ method, scheme, authority, path, headers = [], content = new Uint8Array() }) {
  const control = [method, scheme, authority, path].map((part) => lengthPrefixed(enc.encode(part)));
  return concat(varint(0), ...control, fieldSection(headers), lengthPrefixed(content), fieldSection([]));
}

/** A known-length Binary HTTP response: {status, headers: [[name, value]], content}. */
export function decodeResponse(bytes) {
  let at = 0;
  const need = (n) => {
    if (at + n > bytes.length) throw new Error("the response is cut short");
  };
  const readVarint = () => {
    need(1);
    const size = 1 << (bytes[at] >> 6);
    need(size);
    let value = bytes[at] & 0x3f;
    for (let i = 1; i < size; i++) value = value * 256 + bytes[at + i];
    at += size;
    return value;
  };
  const take = (n) => {
    need(n);
    at += n;
    return bytes.subarray(at - n, at);
  };
  const fields = () => {
    if (at >= bytes.length) return [];
    const section = take(readVarint());
    const out = [];
    let inner = 0;
    const next = () => {
      const size = 1 << (section[inner] >> 6);
      let value = section[inner] & 0x3f;
      for (let i = 1; i < size; i++) value = value * 256 + section[inner + i];
      inner += size;
      const text = new TextDecoder("latin1").decode(section.subarray(inner, inner + value));
      inner += value;
      if (inner > section.length) throw new Error("a field is cut short");
      return text;
    };
    while (inner < section.length) out.push([next().toLowerCase(), next()]);
    return out;
  };
  if (readVarint() !== 1) throw new Error("not a known-length response");
  let status = readVarint();
  while (status >= 100 && status < 200) {
    fields();
    status = readVarint();
  }
  if (status < 200 || status > 599) throw new Error(`status ${status} is not an HTTP status`);
  const headers = fields();
  const content = at < bytes.length ? take(readVarint()) : new Uint8Array();
  fields(); // trailers
  if (bytes.subarray(at).some((b) => b !== 0)) throw new Error("bytes after the response");
  return { status, headers, content };
}

// ---------------------------------------------------------------------------------------
// Key configurations (RFC 9458 section 3)

/** The key configurations of an application/ohttp-keys document. */
export function parseKeyConfigs(bytes) {
  const out = [];
  let at = 0;
  while (at < bytes.length) {
    const length = (bytes[at] << 8) | bytes[at + 1];
    const raw = bytes.subarray(at + 2, at + 2 + length);
    if (raw.length !== length || length < 3 + NPK + 2) throw new Error("a key configuration is cut short");
    const kemId = (raw[1] << 8) | raw[2];
    const algorithms = [];
    for (let i = 3 + NPK + 2; i + 4 <= raw.length; i += 4) {
      algorithms.push([(raw[i] << 8) | raw[i + 1], (raw[i + 2] << 8) | raw[i + 3]]);
    }
    out.push({ keyId: raw[0], kemId, publicKey: raw.slice(3, 3 + NPK), algorithms });
    at += 2 + length;
  }
  return out;
}

/** The configuration to seal to, from a survey's `ohttp_keys` (base64): the first that offers
 * deniable's suite. */
export function keyConfigFromText(text) {
  const bytes = Uint8Array.from(atob(text), (c) => c.charCodeAt(0));
  const found = parseKeyConfigs(bytes).find(
    (c) => c.kemId === KEM_ID && c.algorithms.some(([kdf, aead]) => kdf === KDF_ID && aead === AEAD_ID),
  );
  if (!found) throw new Error("the survey's key offers no suite this page speaks");
  return found;
}

// ---------------------------------------------------------------------------------------
// HKDF-SHA256 and HPKE (RFC 9180), base mode

async function hmac(key, data) {
  const k = await crypto.subtle.importKey("raw", key.length ? key : new Uint8Array(32), { name: "HMAC", hash: "SHA-256" }, false, ["sign"]);
  return new Uint8Array(await crypto.subtle.sign("HMAC", k, data));
}

/** HKDF-Extract(salt, ikm). */
export const extract = (salt, ikm) => hmac(salt, ikm);

/** HKDF-Expand(prk, info, length). */
export async function expand(prk, info, length) {
  const out = [];
  let block = new Uint8Array();
  for (let i = 1; out.length * 32 < length; i++) {
    block = await hmac(prk, concat(block, info, new Uint8Array([i])));
    out.push(block);
  }
  return concat(...out).slice(0, length);
}

const V1 = enc.encode("HPKE-v1");
const KEM_SUITE = concat(enc.encode("KEM"), u16(KEM_ID));
const HPKE_SUITE = concat(enc.encode("HPKE"), u16(KEM_ID), u16(KDF_ID), u16(AEAD_ID));
const labeledExtract = (suite, salt, label, ikm) => extract(salt, concat(V1, suite, enc.encode(label), ikm));
const labeledExpand = (suite, prk, label, info, length) =>
  expand(prk, concat(u16(length), V1, suite, enc.encode(label), info), length);

const PKCS8_X25519 = Uint8Array.from([0x30, 0x2e, 0x02, 0x01, 0x00, 0x30, 0x05, 0x06, 0x03, 0x2b, 0x65, 0x6e, 0x04, 0x22, 0x04, 0x20]);

/** An X25519 key pair {privateKey, publicKey (raw bytes)}: fresh, or from raw private bytes
 * (test vectors only). */
export async function x25519Pair(privateBytes = null) {
  if (!privateBytes) {
    const pair = await crypto.subtle.generateKey({ name: "X25519" }, true, ["deriveBits"]);
    return { privateKey: pair.privateKey, publicKey: new Uint8Array(await crypto.subtle.exportKey("raw", pair.publicKey)) };
  }
  const privateKey = await crypto.subtle.importKey("pkcs8", concat(PKCS8_X25519, privateBytes), { name: "X25519" }, true, ["deriveBits"]);
  const jwk = await crypto.subtle.exportKey("jwk", privateKey);
  const publicKey = Uint8Array.from(atob(jwk.x.replace(/-/g, "+").replace(/_/g, "/")), (c) => c.charCodeAt(0));
  return { privateKey, publicKey };
}

/** SetupBaseS(pkR, info): the sender's context {enc, key, baseNonce, exporterSecret, seq}.
 * `ephemeral` (from x25519Pair) is for test vectors only; the default is fresh. */
export async function setupBaseS(pkR, info, ephemeral = null) {
  const pair = ephemeral || (await x25519Pair());
  const peer = await crypto.subtle.importKey("raw", pkR, { name: "X25519" }, false, []);
  const dh = new Uint8Array(await crypto.subtle.deriveBits({ name: "X25519", public: peer }, pair.privateKey, 256));
  const encapsulated = pair.publicKey;
  const eaePrk = await labeledExtract(KEM_SUITE, new Uint8Array(), "eae_prk", dh);
  const shared = await labeledExpand(KEM_SUITE, eaePrk, "shared_secret", concat(encapsulated, pkR), 32);
  const context = concat(
    new Uint8Array([0]),
    await labeledExtract(HPKE_SUITE, new Uint8Array(), "psk_id_hash", new Uint8Array()),
    await labeledExtract(HPKE_SUITE, new Uint8Array(), "info_hash", info),
  );
  const secret = await labeledExtract(HPKE_SUITE, shared, "secret", new Uint8Array());
  return {
    enc: encapsulated,
    sharedSecret: shared,
    key: await labeledExpand(HPKE_SUITE, secret, "key", context, NK),
    baseNonce: await labeledExpand(HPKE_SUITE, secret, "base_nonce", context, NN),
    exporterSecret: await labeledExpand(HPKE_SUITE, secret, "exp", context, 32),
    seq: 0,
  };
}

/** Seal `pt` with `aad` in the context (its sequence number goes up). */
export async function seal(ctx, aad, pt) {
  const nonce = ctx.baseNonce.slice();
  for (let i = 0, seq = ctx.seq; i < 8 && seq > 0; i++, seq = Math.floor(seq / 256)) nonce[NN - 1 - i] ^= seq % 256;
  ctx.seq += 1;
  const key = await crypto.subtle.importKey("raw", ctx.key, "AES-GCM", false, ["encrypt"]);
  return new Uint8Array(await crypto.subtle.encrypt({ name: "AES-GCM", iv: nonce, additionalData: aad }, key, pt));
}

/** Export(exporter_context, L). */
export const exportSecret = (ctx, exporterContext, length) =>
  labeledExpand(HPKE_SUITE, ctx.exporterSecret, "sec", exporterContext, length);

// ---------------------------------------------------------------------------------------
// Encapsulation (RFC 9458 section 4)

/** Seal a Binary HTTP request to a key configuration: {encapsulated, open(response)}, where
 * open gives the Binary HTTP response inside the gateway's answer (or throws if changed). */
export async function encapsulate(config, request, ephemeral = null) {
  const header = concat(new Uint8Array([config.keyId]), u16(KEM_ID), u16(KDF_ID), u16(AEAD_ID));
  const ctx = await setupBaseS(config.publicKey, concat(enc.encode("message/bhttp request"), new Uint8Array([0]), header), ephemeral);
  const encapsulated = concat(header, ctx.enc, await seal(ctx, new Uint8Array(), request));
  const open = async (answer) => {
    const size = Math.max(NN, NK);
    const secret = await exportSecret(ctx, enc.encode("message/bhttp response"), size);
    const prk = await extract(concat(ctx.enc, answer.subarray(0, size)), secret);
    const key = await crypto.subtle.importKey("raw", await expand(prk, enc.encode("key"), NK), "AES-GCM", false, ["decrypt"]);
    const iv = await expand(prk, enc.encode("nonce"), NN);
    return new Uint8Array(await crypto.subtle.decrypt({ name: "AES-GCM", iv }, key, answer.subarray(size)));
  };
  return { encapsulated, open };
}

/** POST a report through its survey's relay; the parts of the answer the delivery policy
 * reads ({status, type, retry, text}: the aggregator's answer inside, or the relay's own), or
 * null when the relay could not be reached. Nothing but the sealed request and its type goes
 * to the relay: no cookie, no referrer. */
export async function relayAnswer(server, entry) {
  const target = new URL("/api/v1/reports", server);
  const request = encodeRequest({
    method: "POST",
    scheme: target.protocol.replace(":", ""),
    authority: target.host,
    path: target.pathname,
    headers: [["content-type", "application/json"]],
    content: enc.encode(JSON.stringify(entry.report)),
  });
  const sealed = await encapsulate(keyConfigFromText(entry.ohttp_keys), request);
  let response;
  try {
    response = await fetch(entry.relay, {
      method: "POST",
      headers: { "Content-Type": REQUEST_TYPE },
      body: sealed.encapsulated,
      credentials: "omit",
      referrerPolicy: "no-referrer",
      redirect: "manual",
    });
  } catch {
    return null;
  }
  const header = (name) => response.headers.get(name);
  const outer = { status: response.type === "opaqueredirect" ? 300 : response.status, type: header("Content-Type"), retry: header("Retry-After") };
  if (response.status !== 200 || (outer.type || "").split(";")[0].trim() !== RESPONSE_TYPE) {
    return { ...outer, text: await response.text() };
  }
  try {
    const inner = decodeResponse(await sealed.open(new Uint8Array(await response.arrayBuffer())));
    const get = (name) => inner.headers.find(([n]) => n === name)?.[1] ?? null;
    return { status: inner.status, type: get("content-type"), retry: get("retry-after"), text: new TextDecoder().decode(inner.content) };
  } catch {
    return { status: 502, type: "text/plain", retry: null, text: "the relay passed on an answer that does not open" };
  }
}
