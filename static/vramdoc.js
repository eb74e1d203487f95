// vramdoc: a copy button on each code block. The page works without it; the button only
// appears when the script runs. Labels come from <body data-copy data-copied> (localized).
(function () {
  "use strict";
  var body = document.body;
  var copyLabel = body.getAttribute("data-copy") || "Copy";
  var copiedLabel = body.getAttribute("data-copied") || "Copied";
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
  var blocks = document.querySelectorAll("pre");
  for (var i = 0; i < blocks.length; i++) {
    (function (pre) {
      var button = document.createElement("button");
      button.type = "button";
      button.className = "copy-code";
      button.textContent = copyLabel;
      button.addEventListener("click", function () {
        var code = pre.querySelector("code") || pre;
        copy(code.innerText).then(function () {
          button.textContent = copiedLabel;
          setTimeout(function () { button.textContent = copyLabel; }, 1500);
        }, function () {});
      });
      var wrap = document.createElement("div");
      wrap.className = "code-wrap";
      pre.parentNode.insertBefore(wrap, pre);
      wrap.appendChild(pre);
      wrap.appendChild(button);
    })(blocks[i]);
  }
})();

// vramdoc: search across the guides of the page's language. The form is hidden in the HTML and
// shown here, so a page without JavaScript has no box. The index (<lang>/search/00.js, 01.js, …,
// made by the build; part 00 lists the parts) is a set of scripts that push their part
// onto window.vramdocSearch, loaded with <script src> on first use: fetch() is refused from
// file:// pages, scripts are not. Terms are cut as the build cuts them (src/search/mod.rs):
// folded words, and bigrams of CJK runs; every term must occur in a guide, and the last word of
// a query also matches as a prefix (search as you type).
(function () {
  "use strict";
  var form = document.querySelector("form.site-search");
  if (!form) { return; }
  var input = form.querySelector("input");
  var status = form.querySelector(".search-status");
  var list = form.querySelector(".search-results");
  var parts = null;
  var loading = false;
  var MAX_RESULTS = 10;
  form.hidden = false;

  function fold(s) { return s.normalize("NFD").replace(/\p{M}/gu, "").toLowerCase(); }
  function isCjk(c) {
    var n = c.codePointAt(0);
    return (n >= 0x3040 && n <= 0x30FF) || (n >= 0x3100 && n <= 0x312F) || (n >= 0x3400 && n <= 0x4DBF) ||
      (n >= 0x4E00 && n <= 0x9FFF) || (n >= 0xAC00 && n <= 0xD7AF) || (n >= 0xF900 && n <= 0xFAFF) ||
      (n >= 0x20000 && n <= 0x3134F);
  }
  // The query's terms: {text, cjk} in order, each once.
  function terms(text) {
    var out = [], word = "", run = [], seen = {};
    function push(t, cjk) { if (!seen[t]) { seen[t] = true; out.push({ text: t, cjk: cjk }); } }
    function flushRun() {
      if (run.length === 1) { push(run[0], true); }
      for (var i = 0; i + 1 < run.length; i++) { push(run[i] + run[i + 1], true); }
      run = [];
    }
    function flushWord() { if (word) { push(word, false); word = ""; } }
    for (var c of fold(text)) {
      if (isCjk(c)) { flushWord(); run.push(c); }
      else { flushRun(); if (/[\p{L}\p{N}]/u.test(c)) { word += c; } else { flushWord(); } }
    }
    flushRun(); flushWord();
    return out;
  }
  // Per section of part `ix`, the weight of `term` there (the best of the keys it matches; a
  // prefix match counts half).
  function sectionsOf(ix, term, prefix) {
    var found = {}, exact = ix.terms[term.text];
    function add(postings, factor) {
      var sec = 0;
      for (var i = 0; i < postings.length; i += 2) {
        sec += postings[i];
        var w = postings[i + 1] * factor;
        if (!(found[sec] >= w)) { found[sec] = w; }
      }
    }
    if (exact) { add(exact, 1); }
    var lone = term.cjk && Array.from(term.text).length === 1;
    if ((prefix && !term.cjk) || lone) {
      for (var k = 0; k < ix.keys.length; k++) {
        var key = ix.keys[k];
        if (key === term.text) { continue; }
        if (key.startsWith(term.text) || (lone && key.endsWith(term.text))) { add(ix.terms[key], 0.5); }
      }
    }
    return found;
  }
  // The guides of part `ix` holding every term: {ix, doc, score, section}.
  function searchPart(ix, ts, prefixLast, results) {
    var docs = {};
    ts.forEach(function (t, i) {
      var found = sectionsOf(ix, t, prefixLast && i === ts.length - 1);
      for (var sec in found) {
        var d = ix.sections[sec][0];
        var doc = docs[d] || (docs[d] = { has: {}, secs: {} });
        doc.has[i] = Math.max(doc.has[i] || 0, found[sec]);
        doc.secs[sec] = (doc.secs[sec] || 0) + found[sec];
      }
    });
    for (var d in docs) {
      var doc = docs[d], score = 0, best = -1, bestScore = -1;
      if (Object.keys(doc.has).length !== ts.length) { continue; }
      for (var i in doc.has) { score += doc.has[i]; }
      for (var s in doc.secs) {
        var n = Number(s);
        if (doc.secs[s] > bestScore || (doc.secs[s] === bestScore && n < best)) { best = n; bestScore = doc.secs[s]; }
      }
      results.push({ ix: ix, doc: Number(d), score: score, section: best });
    }
  }
  function search(query) {
    var ts = terms(query);
    if (!ts.length) { return null; }
    var results = [];
    parts.forEach(function (ix) { searchPart(ix, ts, !/\s$/.test(query), results); });
    results.sort(function (a, b) { return b.score - a.score || a.ix.part - b.ix.part || a.doc - b.doc; });
    return results;
  }
  function say(text) { status.textContent = text; }
  function show() {
    var query = input.value;
    list.textContent = "";
    if (!query.trim()) { say(""); return; }
    if (!parts) { load(); return; }
    var results = search(query);
    if (!results) { say(""); return; }
    if (!results.length) { say(form.getAttribute("data-none")); return; }
    say(results.length === 1 ? form.getAttribute("data-one")
      : form.getAttribute("data-many").replace("%n", String(results.length)));
    var base = form.getAttribute("data-base");
    results.slice(0, MAX_RESULTS).forEach(function (r) {
      var doc = r.ix.docs[r.doc], sec = r.ix.sections[r.section];
      var li = document.createElement("li");
      var a = document.createElement("a");
      a.href = base + doc[1] + (sec[2] ? "#" + encodeURIComponent(sec[2]) : "");
      a.textContent = doc[0];
      li.appendChild(a);
      if (sec[1]) {
        var where = document.createElement("span");
        where.className = "search-section";
        where.textContent = " › " + sec[1];
        li.appendChild(where);
      }
      if (doc[2]) {
        var p = document.createElement("p");
        p.textContent = doc[2];
        li.appendChild(p);
      }
      list.appendChild(li);
    });
  }
  // Loads part 00, then the others it lists; shows the results when all are in.
  function load() {
    if (loading) { return; }
    loading = true;
    say(form.getAttribute("data-loading"));
    var prefix = form.getAttribute("data-index");
    var failed = false;
    function fail() { if (!failed) { failed = true; loading = false; say(form.getAttribute("data-failed")); } }
    function script(n, done) {
      var s = document.createElement("script");
      s.src = prefix + (n < 16 ? "0" : "") + n.toString(16) + ".js";
      s.onload = done;
      s.onerror = fail;
      document.head.appendChild(s);
    }
    window.vramdocSearch = [];
    script(0, function () {
      var first = window.vramdocSearch[0];
      if (!first || first.v !== 1) { fail(); return; }
      var others = first.parts.filter(function (n) { return n !== 0; });
      var waiting = others.length;
      function ready() {
        var got = window.vramdocSearch.slice().sort(function (a, b) { return a.part - b.part; });
        got.forEach(function (ix) { ix.keys = Object.keys(ix.terms); });
        parts = got;
        show();
      }
      if (waiting === 0) { ready(); return; }
      others.forEach(function (n) {
        script(n, function () { if (--waiting === 0 && !failed) { ready(); } });
      });
    });
  }
  form.addEventListener("submit", function (e) { e.preventDefault(); show(); });
  input.addEventListener("input", show);
  input.addEventListener("focus", function () { if (!parts) { load(); } });
  input.addEventListener("keydown", function (e) {
    if (e.key === "Escape") { input.value = ""; show(); }
  });
})();

// vramdoc: the "All guides" list at the foot of a guide page. Without JavaScript it holds a link
// to the language's index; opened with it, the list itself is loaded from <lang>/guides.js (a
// script setting window.vramdocGuides, in index order) and shown in place, this guide marked.
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
