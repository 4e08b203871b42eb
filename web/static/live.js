// Live updates: the server says "changed" on /events after every commit
// it records; the page's #live region then reloads through htmx. At most
// one reload runs at a time, and a change seen during one reloads again
// after it, so the last change is never lost.
(function () {
  "use strict";
  var busy = false;
  var pending = false;

  // What a link or control is, to find it again in a refreshed page: its
  // id, where it leads or its name, else its text.
  function identity(el) {
    return el.id || el.getAttribute("href") || el.getAttribute("name") || el.textContent.trim();
  }

  // where says which element of the live region has the focus, as its tag,
  // identity and rank among the region's elements alike; null when the
  // focus is elsewhere.
  function where() {
    var live = document.getElementById("live");
    var el = document.activeElement;
    if (!live || !el || el === live || !live.contains(el)) {
      return null;
    }
    var at = {tag: el.tagName, id: identity(el), n: 0};
    at.n = alike(live, at).indexOf(el);
    return at;
  }

  function alike(live, at) {
    return Array.prototype.filter.call(live.getElementsByTagName(at.tag), function (x) {
      return identity(x) === at.id;
    });
  }

  // refocus puts the focus back where it was before a refresh, so that a
  // keyboard user does not lose their place each time the page changes.
  function refocus(at) {
    var live = document.getElementById("live");
    if (!at || !live || live.contains(document.activeElement) && document.activeElement !== live) {
      return;
    }
    var same = alike(live, at);
    var el = same[Math.min(at.n, same.length - 1)];
    if (el) {
      el.focus({preventScroll: true});
    }
  }

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
    var at = where();
    window.htmx.ajax("GET", live.getAttribute("data-live"), {
      target: "#live", select: "#live", swap: "outerHTML"
    }).finally(function () {
      refocus(at);
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
    // A choice made with the mouse takes effect at once; one made with the
    // keyboard, whose arrows change the choice as they go through it,
    // waits for Enter or the Show button.
    var select = document.getElementById("tz-select");
    if (select) {
      var keyed = false;
      select.addEventListener("keydown", function (e) {
        if (e.key === "Enter") {
          e.preventDefault();
          select.form.submit();
          return;
        }
        keyed = e.key !== "Tab";
      });
      select.addEventListener("change", function () {
        if (!keyed) {
          select.form.submit();
        }
        keyed = false;
      });
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
