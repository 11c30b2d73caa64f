// wapipe console: times in the reader's zone (relative and absolute), Ctrl/Cmd+Enter sends a
// reply, the open conversation stays scrolled to its newest message when it updates, and an image
// that cannot be fetched gives way to its media line.
(function () {
  "use strict";
  var rtf = window.Intl && Intl.RelativeTimeFormat ? new Intl.RelativeTimeFormat(undefined, { numeric: "auto" }) : null;
  var abs = new Intl.DateTimeFormat(undefined, { dateStyle: "medium", timeStyle: "short" });

  function relative(ms) {
    var s = Math.round(ms / 1000), a = Math.abs(s);
    if (!rtf) return "";
    if (a < 45) return "just now";
    if (a < 3600) return rtf.format(Math.round(s / 60), "minute");
    if (a < 86400) return rtf.format(Math.round(s / 3600), "hour");
    return rtf.format(Math.round(s / 86400), "day");
  }

  function times(root) {
    var now = Date.now();
    (root || document).querySelectorAll("time[datetime]").forEach(function (el) {
      var d = new Date(el.getAttribute("datetime"));
      if (isNaN(d)) return;
      var rel = relative(d.getTime() - now);
      // The list shows how long ago; elsewhere both, the absolute in the reader's zone.
      el.textContent = !rel ? abs.format(d) : el.closest(".conv-top") ? rel : rel + " · " + abs.format(d);
      el.title = abs.format(d) + " (" + Intl.DateTimeFormat().resolvedOptions().timeZone + ")";
    });
  }

  function threadAtEnd() {
    var t = document.getElementById("thread");
    return !t || t.scrollHeight - t.scrollTop - t.clientHeight < 80;
  }

  function toEnd() {
    var t = document.getElementById("thread");
    if (t) t.scrollTop = t.scrollHeight;
  }

  var stick = true;
  document.addEventListener("htmx:beforeSwap", function (e) {
    if (e.detail.target && e.detail.target.id === "thread") stick = threadAtEnd();
  });
  document.addEventListener("htmx:afterSwap", function (e) {
    times(e.detail.target && e.detail.target.parentNode);
    if (stick) toEnd();
  });

  // A message's image that cannot be fetched (expired at Meta, token refused) is hidden: the
  // bubble's media line ("image · image/jpeg · 12 kB") stands in for it.
  document.addEventListener("error", function (e) {
    var t = e.target;
    if (t && t.classList && t.classList.contains("media-img")) t.hidden = true;
  }, true);

  document.addEventListener("keydown", function (e) {
    if (e.key !== "Enter" || !(e.ctrlKey || e.metaKey)) return;
    var form = e.target && e.target.closest && e.target.closest("#reply-form");
    if (!form || !e.target.value.trim()) return;
    e.preventDefault();
    form.requestSubmit ? form.requestSubmit() : form.submit();
  });

  document.addEventListener("DOMContentLoaded", function () {
    times(document);
    toEnd();
    var ta = document.querySelector("#reply-form textarea");
    if (ta && window.matchMedia("(min-width: 761px)").matches) ta.focus({ preventScroll: true });
    setInterval(function () { times(document); }, 30000);
  });
})();
