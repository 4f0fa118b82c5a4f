// Reload a survey page when new reports arrive (the page works without this script).
(function () {
  "use strict";
  var live = document.getElementById("live");
  if (!live || !window.fetch) { return; }
  var url = live.getAttribute("data-count-url");
  var seen = Number(live.getAttribute("data-n"));
  var every = Math.max(2, Number(live.getAttribute("data-interval")) || 5) * 1000;
  function busy() {
    var el = document.activeElement;
    return el && (el.tagName === "SELECT" || el.tagName === "INPUT" || el.tagName === "TEXTAREA");
  }
  function check() {
    if (document.hidden) { return; }
    fetch(url, { credentials: "same-origin", headers: { Accept: "application/json" } })
      .then(function (r) { return r.ok ? r.json() : null; })
      .then(function (body) {
        if (!body || body.n === seen) { return; }
        if (busy()) {
          document.getElementById("fresh").hidden = false;
        } else {
          window.location.reload();
        }
      })
      .catch(function () { /* offline for a moment: try again later */ });
  }
  window.setInterval(check, every);
})();
