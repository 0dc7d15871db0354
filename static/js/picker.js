// The supersede form's picker (decision page): select the passage to cite in
// the current text of a document, with the mouse or the keyboard (Shift and
// the arrow keys; Ctrl or Alt for words), and see what the new revision will
// cite before submitting. Without this script the form still works: the
// candidate radio, the offsets fields and the drop radio post as they are.
(function () {
  "use strict";

  function codePoints(text) { return Array.from(text).length; }

  // A selection's text as the page shows it: control, format (bidi, zero-width) and separator
  // characters as ⟨U+202E⟩, as the server shows agent text (reviewer/visible.py); the offsets
  // and the posted text keep the raw characters.
  var HIDDEN = /[\p{Cc}\p{Cf}\p{Zl}\p{Zp}]/gu;
  function visible(text) {
    return text.replace(HIDDEN, function (ch) {
      if (ch === "\t" || ch === "\n" || ch === "\r") { return ch; }
      var hex = ch.codePointAt(0).toString(16).toUpperCase();
      return "⟨U+" + ("0000" + hex).slice(-Math.max(4, hex.length)) + "⟩";
    });
  }

  function fieldset(el) { return el && el.closest ? el.closest("fieldset.pick") : null; }

  function selectionIn(box) {
    var sel = window.getSelection();
    if (!sel || sel.rangeCount === 0 || sel.isCollapsed) { return null; }
    var range = sel.getRangeAt(0);
    if (!box.contains(range.startContainer) || !box.contains(range.endContainer)) { return null; }
    var before = document.createRange();
    before.selectNodeContents(box);
    before.setEnd(range.startContainer, range.startOffset);
    // the box shows the text from character data-offset on (a window of a long text)
    var start = (parseInt(box.getAttribute("data-offset"), 10) || 0) + codePoints(before.toString());
    var text = range.toString();
    return { start: start, end: start + codePoints(text), text: text };
  }

  function setPicked(box, picked) {
    var set = fieldset(box);
    if (!set || !picked) { return; }
    var name = set.querySelector("input[data-selection]").name;
    set.querySelector("[name='" + name + "-start']").value = picked.start;
    set.querySelector("[name='" + name + "-end']").value = picked.end;
    set.querySelector("[name='" + name + "-text']").value = picked.text;
    var radio = set.querySelector("input[data-selection]");
    radio.checked = true;
    var shown = visible(picked.text.length > 80 ? picked.text.slice(0, 79) + "…" : picked.text);
    radio.setAttribute("data-cites", set.getAttribute("data-doc") + " version " + set.getAttribute("data-version") +
      ": “" + shown + "”");
    var echo = set.querySelector(".selected-text");
    if (echo) { echo.textContent = "“" + shown + "”"; }
    summarise(set.closest("form"));
  }

  function summarise(form) {
    if (!form) { return; }
    var cites = [];
    var gone = [];
    var dropping = false;
    form.querySelectorAll("[data-gone]").forEach(function (w) { gone.push(w.getAttribute("data-gone")); });
    form.querySelectorAll("input[data-cites], input[data-drops]").forEach(function (input) {
      if (input.type === "radio" && input.checked && input.value === "drop") {
        gone.push(input.getAttribute("data-drops")); dropping = true;
      } else if (input.checked && input.hasAttribute("data-cites")) {
        cites.push(input.getAttribute("data-cites"));
      } else if (input.type === "checkbox" && !input.checked && input.hasAttribute("data-drops")) {
        gone.push(input.getAttribute("data-drops"));
      }
    });
    var seq = form.querySelector("[name=event_seq]");
    if (seq && seq.value) { cites.push("event " + seq.value + " of this task"); }
    var key = form.querySelector("[name=cite_key]");
    if (key && key.value.trim()) { cites.push("the active revision of " + key.value.trim()); }
    var add = form.querySelector("[name=add]");
    if (add) { add.value.split("\n").forEach(function (l) { if (l.trim()) { cites.push(l.trim()); } }); }
    var box = form.querySelector("#will-cite");
    if (!box) { return; }
    fill(box.querySelector("ul.cites"), cites, "nothing yet: pick at least one support");
    fill(box.querySelector("ul.dropped"), gone, null);
    box.querySelector(".no-longer").hidden = gone.length === 0;
    box.querySelector(".confirm-drop").hidden = !dropping;
  }

  function fill(list, lines, empty) {
    if (!list) { return; }
    list.textContent = "";
    lines.forEach(function (line) { var li = document.createElement("li"); li.textContent = line; list.appendChild(li); });
    if (!lines.length && empty) { var li = document.createElement("li"); li.className = "warn"; li.textContent = empty; list.appendChild(li); }
  }

  function startAtCandidate(box) {
    var sel = window.getSelection();
    var mark = box.querySelector("mark.candidate");
    var range = document.createRange();
    if (mark && mark.textContent) { range.selectNodeContents(mark); } else { range.setStart(box, 0); range.collapse(true); }
    sel.removeAllRanges();
    sel.addRange(range);
  }

  function onKey(event) {
    var box = event.currentTarget;
    var keys = { ArrowRight: "forward", ArrowLeft: "backward", ArrowDown: "forward", ArrowUp: "backward",
                 End: "forward", Home: "backward" };
    var direction = keys[event.key];
    if (!direction) { return; }
    var sel = window.getSelection();
    if (!sel.rangeCount || !box.contains(sel.anchorNode)) { startAtCandidate(box); if (!event.shiftKey) { event.preventDefault(); return; } }
    var unit = event.key === "Home" || event.key === "End" ? "lineboundary"
      : event.key === "ArrowUp" || event.key === "ArrowDown" ? "line" : (event.ctrlKey || event.altKey) ? "word" : "character";
    sel.modify(event.shiftKey ? "extend" : "move", direction, unit);
    event.preventDefault();
  }

  function initBox(box) {
    if (box.getAttribute("data-ready")) { return; }
    box.setAttribute("data-ready", "1");
    {
      var mark = box.querySelector("mark.candidate");
      if (mark && mark.textContent) { box.scrollTop = Math.max(0, mark.offsetTop - box.offsetTop - 40); }
      box.addEventListener("keydown", onKey);
      // a click selects with the mouse; only a keyboard focus starts at the candidate
      box.addEventListener("mousedown", function () { box.setAttribute("data-mouse", "1"); });
      box.addEventListener("focus", function () {
        if (box.getAttribute("data-mouse")) { box.removeAttribute("data-mouse"); return; }
        var sel = window.getSelection();
        if (!sel.rangeCount || !box.contains(sel.anchorNode)) { startAtCandidate(box); }
      });
    }
  }

  function init(form) {
    form.querySelectorAll(".pick-text").forEach(initBox);
    form.addEventListener("change", function () { summarise(form); });
    form.addEventListener("input", function (event) {
      var t = event.target;
      if (t.name && /-(start|end)$/.test(t.name)) {
        var set = fieldset(t);
        var radio = set && set.querySelector("input[data-selection]");
        if (radio) { radio.checked = true; set.querySelector("[name='" + radio.name + "-text']").value = ""; }
      }
      summarise(form);
    });
    summarise(form);
  }

  document.addEventListener("selectionchange", function () {
    document.querySelectorAll("form[data-picker] .pick-text").forEach(function (box) {
      var picked = selectionIn(box);
      if (picked && picked.end > picked.start) { setPicked(box, picked); }
    });
  });

  // keyboard focus survives htmx swaps on this page: the element that had it
  // (by id) gets it back, else the new content's first action
  var focusedId = null;
  document.addEventListener("htmx:beforeRequest", function () {
    var active = document.activeElement;
    focusedId = active && active.id ? active.id : null;
  });
  document.addEventListener("htmx:afterSettle", function (event) {
    // more of a document's text swapped into the picker: its box works as the first did
    document.querySelectorAll("form[data-picker] .pick-text").forEach(initBox);
    var again = focusedId && document.getElementById(focusedId);
    var target = again || (event.detail && event.detail.target && event.detail.target.querySelector &&
      event.detail.target.querySelector("[data-autofocus]"));
    if (target && target.focus) { target.focus({ preventScroll: true }); }
  });

  function ready() {
    document.querySelectorAll("form[data-picker]").forEach(init);
    // landing on a decision (after "and next"), the first action has the focus
    var first = !window.location.hash && document.querySelector("[data-autofocus]");
    if (first && document.activeElement === document.body) { first.focus({ preventScroll: true }); }
  }
  if (document.readyState === "loading") { document.addEventListener("DOMContentLoaded", ready); } else { ready(); }
})();
