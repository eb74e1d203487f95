// vramdoc: what a page does with JavaScript. Every part is an addition: without the script the
// page reads the same (no copy buttons, the contents list stays a collapsed list, the system's
// colour scheme). Labels come from <body data-*> (localized). Search, and the highlights on a
// page opened from a result, are in search.js.

// The colour-scheme button: system (the default), light, dark; the choice is remembered in
// localStorage and applied before the first paint by a line in <head>.
(function () {
  "use strict";
  var button = document.querySelector(".theme-toggle");
  if (!button) { return; }
  var root = document.documentElement;
  var order = ["system", "light", "dark"];
  function current() { return root.getAttribute("data-theme") || "system"; }
  function label() {
    var name = button.getAttribute("data-" + current());
    button.textContent = name;
    button.setAttribute("aria-label", button.getAttribute("data-label") + ": " + name);
  }
  button.hidden = false;
  label();
  button.addEventListener("click", function () {
    var next = order[(order.indexOf(current()) + 1) % order.length];
    if (next === "system") { root.removeAttribute("data-theme"); } else { root.setAttribute("data-theme", next); }
    try {
      if (next === "system") { localStorage.removeItem("vramdoc-theme"); } else { localStorage.setItem("vramdoc-theme", next); }
    } catch (e) { /* storage refused (private mode): the choice lasts for this page */ }
    label();
  });
})();

// A copy button on each code block; a failed copy says so and selects the code instead.
(function () {
  "use strict";
  var body = document.body;
  var copyLabel = body.getAttribute("data-copy") || "Copy";
  var copiedLabel = body.getAttribute("data-copied") || "Copied";
  var failedLabel = body.getAttribute("data-copy-failed") || "Copy failed";
  function copy(text) {
    if (navigator.clipboard && window.isSecureContext) {
      return navigator.clipboard.writeText(text);
    }
    // file:// and plain http: the clipboard API is unavailable; fall back to a selection.
    return new Promise(function (resolve, reject) {
      var area = document.createElement("textarea");
      area.value = text;
      area.setAttribute("readonly", "");
      area.style.position = "fixed";
      area.style.opacity = "0";
      body.appendChild(area);
      area.select();
      var ok = false;
      try { ok = document.execCommand("copy"); } catch (e) { ok = false; }
      body.removeChild(area);
      if (ok) { resolve(); } else { reject(new Error("copy failed")); }
    });
  }
  function say(button, text, failed) {
    button.textContent = text;
    button.classList.toggle("failed", failed);
    setTimeout(function () { button.textContent = copyLabel; button.classList.remove("failed"); }, failed ? 4000 : 1500);
  }
  var blocks = document.querySelectorAll("pre");
  for (var i = 0; i < blocks.length; i++) {
    (function (pre) {
      var button = document.createElement("button");
      button.type = "button";
      button.className = "copy-code";
      button.textContent = copyLabel;
      button.setAttribute("aria-live", "polite");
      button.addEventListener("click", function () {
        var code = pre.querySelector("code") || pre;
        copy(code.innerText).then(function () { say(button, copiedLabel, false); }, function () {
          say(button, failedLabel, true);
          var range = document.createRange();
          range.selectNodeContents(code);
          var sel = window.getSelection();
          sel.removeAllRanges();
          sel.addRange(range);
        });
      });
      var wrap = document.createElement("div");
      wrap.className = "code-wrap";
      pre.parentNode.insertBefore(wrap, pre);
      wrap.appendChild(pre);
      wrap.appendChild(button);
    })(blocks[i]);
  }
})();

// A cue on whatever scrolls sideways (a wide table, a long line of code): a shadow on the side
// that has more, and under a table the words "scroll sideways for more".
(function () {
  "use strict";
  var hint = document.body.getAttribute("data-scrolls") || "→";
  var boxes = document.querySelectorAll(".table-wrap, pre");
  function mark(box) {
    var more = box.scrollWidth - box.clientWidth > 1;
    box.classList.toggle("overflows", more);
    var atEnd = more && box.scrollLeft + box.clientWidth >= box.scrollWidth - 1;
    box.classList.toggle("scrolled-end", atEnd && box.scrollLeft > 0);
    box.classList.toggle("scrolled-mid", more && !atEnd && box.scrollLeft > 0);
    var next = box.nextElementSibling;
    var has = next && next.classList.contains("scroll-hint");
    if (more && !has && box.classList.contains("table-wrap")) {
      var p = document.createElement("span");
      p.className = "scroll-hint";
      p.setAttribute("aria-hidden", "true");
      p.textContent = hint;
      box.parentNode.insertBefore(p, box.nextSibling);
    } else if (!more && has) {
      next.parentNode.removeChild(next);
    }
  }
  function all() { for (var i = 0; i < boxes.length; i++) { mark(boxes[i]); } }
  for (var i = 0; i < boxes.length; i++) {
    boxes[i].addEventListener("scroll", function (e) { mark(e.currentTarget); }, { passive: true });
  }
  all();
  window.addEventListener("resize", all);
  window.addEventListener("load", all);
})();

// Exact byte counts: a figure's tooltip (its title) is shown under it on a tap or click, since
// touch screens have no hover.
(function () {
  "use strict";
  document.addEventListener("click", function (e) {
    var fig = e.target.closest && e.target.closest(".figure[title]");
    if (!fig) { return; }
    var next = fig.nextElementSibling;
    if (next && next.classList.contains("figure-exact")) { next.parentNode.removeChild(next); return; }
    var exact = document.createElement("span");
    exact.className = "figure-exact";
    exact.textContent = "(" + fig.getAttribute("title") + ")";
    fig.parentNode.insertBefore(exact, fig.nextSibling);
  });
})();

// Contents: open on desktops (a sticky column there), collapsed on smaller screens; the link of
// the section being read is marked.
(function () {
  "use strict";
  var toc = document.querySelector(".toc details");
  if (!toc) { return; }
  var wide = window.matchMedia("(min-width: 1100px)");
  function fit() { toc.open = wide.matches; }
  fit();
  if (wide.addEventListener) { wide.addEventListener("change", fit); }
  var links = toc.querySelectorAll("a[href^='#']");
  var byId = {};
  var heads = [];
  for (var i = 0; i < links.length; i++) {
    var id = decodeURIComponent(links[i].getAttribute("href").slice(1));
    var h = document.getElementById(id);
    if (h) { byId[id] = links[i]; heads.push(h); }
  }
  var marked = null;
  function update() {
    var line = window.innerHeight * 0.25, here = null;
    for (var i = 0; i < heads.length; i++) {
      if (heads[i].getBoundingClientRect().top <= line) { here = heads[i]; } else { break; }
    }
    var link = here ? byId[here.id] : null;
    if (link === marked) { return; }
    if (marked) { marked.removeAttribute("aria-current"); }
    if (link) { link.setAttribute("aria-current", "location"); }
    marked = link;
  }
  var queued = false;
  window.addEventListener("scroll", function () {
    if (queued) { return; }
    queued = true;
    window.requestAnimationFrame(function () { queued = false; update(); });
  }, { passive: true });
  update();
})();

// The "All guides" list at the foot of a guide page. Without JavaScript it holds a link to the
// language's index; opened with it, the list itself is loaded from <lang>/guides.js (a script
// setting window.vramdocGuides, in index order) and shown in place, this guide marked.
(function () {
  "use strict";
  var box = document.querySelector("details.all-guides[data-list]");
  if (!box) { return; }
  var loaded = false;
  function show() {
    var guides = window.vramdocGuides;
    if (!Array.isArray(guides)) { return; }
    var current = box.getAttribute("data-current");
    var list = document.createElement("ol");
    list.className = "all-guides-list";
    guides.forEach(function (g) {
      var item = document.createElement("li");
      if (g.s === current) {
        var here = document.createElement("span");
        here.setAttribute("aria-current", "page");
        here.textContent = g.t;
        item.appendChild(here);
      } else {
        var link = document.createElement("a");
        link.href = "../" + encodeURIComponent(g.s) + "/index.html";
        link.textContent = g.t;
        item.appendChild(link);
      }
      list.appendChild(item);
    });
    box.appendChild(list);
    var fallback = box.querySelector("p");
    if (fallback) { fallback.hidden = true; }
  }
  box.addEventListener("toggle", function () {
    if (!box.open || loaded) { return; }
    loaded = true;
    var s = document.createElement("script");
    s.src = box.getAttribute("data-list");
    s.onload = show;
    document.head.appendChild(s);
  });
})();
