// The respondent page's service worker (a module worker; docs/fieldwork.md). It keeps the page,
// its modules, its CSS and the survey document so that the page opens and answers offline after
// one online visit: network first (an online visit always gets the current files), the cache
// when there is no network. Its Background Sync handler sends the outbox (deniable.js, the same
// code and the same one-sender lock as the page) when the network comes back.
import { resendQueued, useRelay } from "./deniable.js";
import { relayAnswer } from "./ohttp.js";

useRelay(relayAnswer); // a worker cannot load a module later: reports through a relay need it now

const CACHE = "deniable-page-v1";
const SYNC_TAG = "deniable-outbox";

self.addEventListener("install", () => self.skipWaiting());
self.addEventListener("activate", (event) => event.waitUntil(self.clients.claim()));

/** The page's own files, wherever they are served from (/static/ or next to an export). */
const FILES =
  /\/(deniable|probability|text|mechanisms|canonical|signing|ledger|delivery|ohttp|conditions|memo|languages|markdown|shared-device|respond|sw)\.js$|\/respond\.css$/;

/** Whether a request is one the page needs offline: a GET of the page (under this worker's
 * scope) or of its files on this origin, or of a survey document (the aggregator's, perhaps on
 * another origin). Nothing else of this origin (a researcher's page, say) is ever kept. */
function keeps(request) {
  if (request.method !== "GET") return false;
  const url = new URL(request.url);
  if (url.protocol !== "https:" && url.protocol !== "http:") return false;
  if (/^\/api\/v1\/surveys\/[^/]+$/.test(url.pathname)) return true;
  if (url.origin !== self.location.origin) return false;
  const scope = new URL(self.registration.scope).pathname;
  return FILES.test(url.pathname) || url.pathname.startsWith(scope);
}

/** A response worth keeping: a whole, successful answer (not opaque, not an error). */
const keepable = (response) => response.ok && (response.type === "basic" || response.type === "cors");

async function networkFirst(request) {
  const cache = await caches.open(CACHE);
  try {
    const response = await fetch(request);
    if (keepable(response)) await cache.put(request, response.clone());
    return response;
  } catch (error) {
    const found =
      (await cache.match(request, { ignoreVary: true })) ||
      (request.mode === "navigate"
        ? await cache.match(request, { ignoreSearch: true, ignoreVary: true })
        : undefined);
    if (found) return found;
    throw error;
  }
}

self.addEventListener("fetch", (event) => {
  if (keeps(event.request)) event.respondWith(networkFirst(event.request));
});

/** The page's first visit was not served through this worker: keep what it loaded. */
async function keepAll(urls) {
  const cache = await caches.open(CACHE);
  await Promise.all(
    urls.map(async (url) => {
      const request = new Request(url);
      if (!keeps(request)) return;
      try {
        const response = await fetch(request, { cache: "no-cache", credentials: "omit" });
        if (keepable(response)) await cache.put(request, response);
      } catch {
        // offline already: kept on the next online visit
      }
    }),
  );
}

self.addEventListener("message", (event) => {
  const urls = event.data?.cache;
  if (Array.isArray(urls) && urls.length <= 100 && urls.every((u) => typeof u === "string")) {
    event.waitUntil(keepAll(urls));
  }
});

self.addEventListener("sync", (event) => {
  if (event.tag !== SYNC_TAG) return;
  event.waitUntil(
    resendQueued(null, { eager: true }).then((queued) => {
      // Still waiting: fail, so that the browser tries this sync again later.
      if (queued.some((entry) => entry.status === "queued")) throw new Error("reports still waiting");
    }),
  );
});
