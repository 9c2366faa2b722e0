// Progressive enhancement only: every page works without this file.
// - Polls the page every 2 s while it says something runs (main[data-live="on"]) and swaps the
//   parts marked data-refresh, so progress bars move without a reload; stops when nothing runs.
// - Asks for confirmation in a dialog instead of the confirmation page.
(function () {
  "use strict";
  var INTERVAL_MS = 2000;
  var timer = null;
  var failures = 0;

  function main() { return document.getElementById("main"); }

  function swap(fresh) {
    var incoming = fresh.getElementById("main");
    var current = main();
    if (!incoming || !current) return false;
    var live = incoming.getAttribute("data-live") === "on";
    if (!live) {
      // The work settled: show the final page whole (its buttons may have changed too).
      current.innerHTML = incoming.innerHTML;
    } else {
      incoming.querySelectorAll("[data-refresh][id]").forEach(function (part) {
        var old = document.getElementById(part.id);
        if (old && !old.contains(document.activeElement)) old.replaceWith(part);
      });
    }
    current.setAttribute("data-live", live ? "on" : "off");
    var status = fresh.getElementById("live-status");
    var oldStatus = document.getElementById("live-status");
    if (status && oldStatus) oldStatus.replaceWith(status);
    return live;
  }

  function tick() {
    timer = null;
    if (document.hidden) { schedule(); return; }
    fetch(window.location.href, { headers: { "Accept": "text/html" }, credentials: "same-origin" })
      .then(function (response) {
        if (!response.ok) throw new Error("HTTP " + response.status);
        return response.text();
      })
      .then(function (text) {
        failures = 0;
        var doc = new DOMParser().parseFromString(text, "text/html");
        if (swap(doc)) schedule();
      })
      .catch(function () {
        failures += 1;
        var status = document.getElementById("live-status");
        if (status) status.textContent = "Lost contact with the dashboard; retrying…";
        schedule(Math.min(INTERVAL_MS * Math.pow(2, failures), 30000));
      });
  }

  function schedule(delay) {
    if (timer === null) timer = window.setTimeout(tick, delay || INTERVAL_MS);
  }

  document.addEventListener("submit", function (event) {
    var form = event.target;
    var question = form.getAttribute && form.getAttribute("data-confirm");
    if (!question) return;
    if (!window.confirm(question)) { event.preventDefault(); return; }
    var confirmed = form.querySelector('input[name="confirmed"]');
    if (confirmed) confirmed.value = "1";
  });

  document.addEventListener("visibilitychange", function () {
    var m = main();
    if (!document.hidden && m && m.getAttribute("data-live") === "on") schedule(10);
  });

  var m = main();
  if (m && m.getAttribute("data-live") === "on") schedule();
})();
