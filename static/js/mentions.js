// @mention autocomplete for the discussion's text areas (textarea[data-mentions]):
// typing "@" and the start of a name asks the project's endpoint for people who
// can see the project (at most ten); picking one puts "@name " in the text.
// Names are written with textContent, never as HTML.
(function () {
  if (window.reviewerMentions) return;
  window.reviewerMentions = true;
  var box = null, field = null, timer = null;

  function close() { if (box) { box.remove(); box = null; } }

  function prefixAt(area) {
    var upto = area.value.slice(0, area.selectionStart);
    var m = /(^|[^\w@.+-])@([\w.@+-]{0,150})$/.exec(upto);
    return m ? m[2] : null;
  }

  function pick(name) {
    var area = field, at = area.selectionStart;
    var upto = area.value.slice(0, at), start = upto.lastIndexOf("@");
    area.value = area.value.slice(0, start) + "@" + name + " " + area.value.slice(at);
    area.selectionStart = area.selectionEnd = start + name.length + 2;
    close();
    area.focus();
  }

  function show(area, names) {
    close();
    if (!names.length) return;
    field = area;
    box = document.createElement("ul");
    box.className = "mention-box";
    box.setAttribute("role", "listbox");
    names.forEach(function (name, i) {
      var li = document.createElement("li"), b = document.createElement("button");
      b.type = "button";
      b.textContent = "@" + name;
      b.setAttribute("role", "option");
      b.addEventListener("mousedown", function (e) { e.preventDefault(); pick(name); });
      b.addEventListener("keydown", function (e) {
        if (e.key === "Escape") { close(); area.focus(); }
        if (e.key === "ArrowDown" && li.nextSibling) { e.preventDefault(); li.nextSibling.firstChild.focus(); }
        if (e.key === "ArrowUp") { e.preventDefault(); (li.previousSibling ? li.previousSibling.firstChild : area).focus(); }
      });
      b.addEventListener("click", function () { pick(name); });
      li.appendChild(b);
      box.appendChild(li);
    });
    area.insertAdjacentElement("afterend", box);
  }

  document.addEventListener("input", function (e) {
    var area = e.target;
    if (!area.matches || !area.matches("textarea[data-mentions]")) return;
    var prefix = prefixAt(area);
    clearTimeout(timer);
    if (prefix === null) { close(); return; }
    timer = setTimeout(function () {
      fetch(area.dataset.mentions + "?q=" + encodeURIComponent(prefix), { credentials: "same-origin" })
        .then(function (r) { return r.ok ? r.json() : { people: [] }; })
        .then(function (data) { if (prefixAt(area) === prefix) show(area, data.people || []); })
        .catch(close);
    }, 150);
  });
  document.addEventListener("keydown", function (e) {
    if (!box || e.target !== field) return;
    if (e.key === "Escape") close();
    if (e.key === "ArrowDown") { e.preventDefault(); box.querySelector("button").focus(); }
  });
  document.addEventListener("click", function (e) { if (box && !box.contains(e.target)) close(); });
})();
