// Keyboard review on the queue: j/k move between decisions (past those others
// have claimed), r reaffirms and
// moves on, n reaffirms with a note, s opens supersede, x focuses the reject
// reason, ? shows the keys.
//
// Focus survives every htmx swap: the card acted on is remembered by id
// before the request, and found again in the new document after the swap
// (an outerHTML swap replaces the element, so the old one is detached). An
// "and next" answer (a settled line with data-next) moves the focus to the
// next decision of the group, or the next card on the page.
(function () {
  "use strict";
  function cards() { return Array.prototype.slice.call(document.querySelectorAll(".decision-card")); }
  function current() { return document.querySelector(".decision-card.focused"); }
  function focusCard(card) {
    cards().forEach(function (c) { c.classList.remove("focused"); });
    if (card) { card.classList.add("focused"); card.focus({ preventScroll: true }); card.scrollIntoView({ block: "nearest" }); }
  }
  // j/k pass over the cards someone else has claimed (data-claimed="other")
  function move(step) {
    var here = current();
    var all = cards().filter(function (c) { return c === here || c.dataset.claimed !== "other"; });
    if (!all.length) { return; }
    var at = all.indexOf(current());
    if (at < 0) { focusCard(step > 0 ? all[0] : all[all.length - 1]); return; }
    focusCard(all[Math.max(0, Math.min(all.length - 1, at + step))]);
  }
  // the card after `el` in document order (a settled line is no card)
  function cardAfter(el) {
    var all = cards();
    for (var i = 0; i < all.length; i++) {
      if (el.compareDocumentPosition(all[i]) & Node.DOCUMENT_POSITION_FOLLOWING) { return all[i]; }
    }
    return all.length ? all[all.length - 1] : null;
  }
  document.addEventListener("keydown", function (event) {
    var target = event.target;
    if (event.ctrlKey || event.metaKey || event.altKey) { return; }
    if (target && (target.tagName === "INPUT" || target.tagName === "TEXTAREA" || target.tagName === "SELECT")) {
      if (event.key === "Escape") { var card = target.closest(".decision-card"); target.blur(); if (card) { focusCard(card); } }
      return;
    }
    var card = current();
    if (event.key === "j") { move(1); }
    else if (event.key === "k") { move(-1); }
    else if (event.key === "?") { var help = document.getElementById("keyhelp"); if (help && help.showModal) { help.showModal(); } }
    else if (card && event.key === "r") { var r = card.querySelector("[data-key=r]"); if (r) { r.click(); } else { return; } }
    else if (card && event.key === "s") { var s = card.querySelector("[data-key=s]"); if (s) { window.location = s.href; } else { return; } }
    else if (card && (event.key === "x" || event.key === "n")) {
      var field = card.querySelector("[data-key=" + event.key + "]"); if (field) { field.focus(); } else { return; }
    }
    else { return; }
    event.preventDefault();
  });
  // remember which card a request acts on ...
  var acting = null;
  document.addEventListener("htmx:beforeRequest", function (event) {
    var card = event.detail && event.detail.elt && event.detail.elt.closest && event.detail.elt.closest(".decision-card");
    if (card) { acting = card.id; }
  });
  // ... and find it again once the answer is in place
  document.addEventListener("htmx:afterSettle", function () {
    if (!acting) { return; }
    var swapped = document.getElementById(acting);
    acting = null;
    if (!swapped) { return; }
    if (swapped.classList.contains("decision-card")) { focusCard(swapped); return; }  // refused: stay on it
    var next = swapped.dataset.next && document.getElementById(swapped.dataset.next);
    focusCard(next && next.classList.contains("decision-card") ? next : cardAfter(swapped));
  });
  // a page opened at #d-<id> (the queue after an action without htmx) starts there
  if (location.hash.indexOf("#d-") === 0) {
    document.addEventListener("DOMContentLoaded", function () {
      var card = document.getElementById(location.hash.slice(1));
      if (card && card.classList.contains("decision-card")) { focusCard(card); }
    });
  }
})();
