// Live updates: the server says "changed" on /events after every commit
// it records; the page's #live region then reloads through htmx. At most
// one reload runs at a time, and a change seen during one reloads again
// after it, so the last change is never lost.
(function () {
  "use strict";
  var busy = false;
  var pending = false;

  function refresh() {
    var live = document.getElementById("live");
    if (!live || !window.htmx) {
      return;
    }
    if (busy) {
      pending = true;
      return;
    }
    busy = true;
    window.htmx.ajax("GET", live.getAttribute("data-live"), {
      target: "#live", select: "#live", swap: "outerHTML"
    }).finally(function () {
      busy = false;
      if (pending) {
        pending = false;
        refresh();
      }
    });
  }

  function start() {
    if (!window.EventSource || !document.getElementById("live")) {
      return;
    }
    var source = new EventSource("/events");
    source.addEventListener("changed", refresh);
    source.addEventListener("open", function () {
      document.documentElement.setAttribute("data-live-connected", "true");
    });
  }

  // Buttons of forms with data-confirm ask before sending.
  document.addEventListener("submit", function (e) {
    var msg = e.target.getAttribute("data-confirm");
    if (msg && !window.confirm(msg)) {
      e.preventDefault();
    }
  }, true);

  // The zone picker sends the browser's own zone, and takes effect as
  // soon as a choice is made.
  function zonePicker() {
    var zone = document.getElementById("tz-browser");
    if (zone && window.Intl) {
      zone.value = Intl.DateTimeFormat().resolvedOptions().timeZone || "";
    }
    var select = document.getElementById("tz-select");
    if (select) {
      select.addEventListener("change", function () { select.form.submit(); });
    }
  }

  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", zonePicker);
  } else {
    zonePicker();
  }

  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", start);
  } else {
    start();
  }
})();
