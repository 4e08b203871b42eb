// Live updates: the server says "changed" on /events after every commit
// it records; every element marked hx-trigger="jobdrop:changed from:body"
// then reloads its part of the page through htmx.
(function () {
  "use strict";
  if (!window.EventSource || !document.querySelector("[data-live]")) {
    return;
  }
  var source = new EventSource("/events");
  source.addEventListener("changed", function () {
    document.body.dispatchEvent(new CustomEvent("jobdrop:changed"));
  });
  source.addEventListener("open", function () {
    document.documentElement.setAttribute("data-live-connected", "true");
  });
  // Confirm buttons carry data-confirm: ask before sending.
  document.addEventListener("submit", function (e) {
    var msg = e.target.getAttribute("data-confirm");
    if (msg && !window.confirm(msg)) {
      e.preventDefault();
    }
  }, true);
})();
