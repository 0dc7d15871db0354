// Keyboard review on the queue: j/k move between decisions, r reaffirms,
// s opens supersede, x focuses the reject reason, ? shows the keys.
(function () {
  "use strict";
  function cards() { return Array.prototype.slice.call(document.querySelectorAll(".decision-card")); }
  function current() { return document.querySelector(".decision-card.focused"); }
  function focusCard(card) {
    cards().forEach(function (c) { c.classList.remove("focused"); });
    if (card) { card.classList.add("focused"); card.focus({ preventScroll: true }); card.scrollIntoView({ block: "nearest" }); }
  }
  function move(step) {
    var all = cards(); if (!all.length) { return; }
    var at = all.indexOf(current());
    focusCard(all[Math.max(0, Math.min(all.length - 1, at + step))] || all[0]);
  }
  document.addEventListener("keydown", function (event) {
    var target = event.target;
    if (event.ctrlKey || event.metaKey || event.altKey) { return; }
    if (target && (target.tagName === "INPUT" || target.tagName === "TEXTAREA" || target.tagName === "SELECT")) { return; }
    var card = current();
    if (event.key === "j") { move(1); }
    else if (event.key === "k") { move(-1); }
    else if (event.key === "?") { var help = document.getElementById("keyhelp"); if (help && help.showModal) { help.showModal(); } }
    else if (card && event.key === "r") { var r = card.querySelector("[data-key=r]"); if (r) { r.click(); } }
    else if (card && event.key === "s") { var s = card.querySelector("[data-key=s]"); if (s) { window.location = s.href; } }
    else if (card && event.key === "x") { var x = card.querySelector("[data-key=x]"); if (x) { x.focus(); } }
    else { return; }
    event.preventDefault();
  });
  // after htmx swaps a card, keep the focus on it
  document.addEventListener("htmx:afterSwap", function (event) {
    var card = event.detail && event.detail.target;
    if (card && card.classList && card.classList.contains("decision-card")) { focusCard(card); }
  });
})();
