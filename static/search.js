// vramdoc: search across the guides of the page's language, and the highlights on a page opened
// from a result. The form is hidden in the HTML and shown here, so a page without JavaScript has
// no box. The index (<lang>/search/00.js, 01.js, …, made by the build; part 00 lists the parts
// and the synonym groups) is a set of scripts that push their part onto window.vramdocSearch,
// loaded with <script src> on first use: fetch() is refused from file:// pages, scripts are not.
//
// A query is cut as the build cuts text (src/search/mod.rs): folded words, and bigrams of CJK
// runs. A run of words that is a member of a synonym group ("out of memory", 爆显存) becomes the
// group's token. Every term must occur in a guide; the last word also matches as a prefix
// (search as you type); a Latin word of 4 letters or more that is in no guide matches the words
// within 1 edit (2 from 7 letters). A "quoted phrase" must occur in one section's text (in a
// section longer than the index keeps whole, its words in that section suffice). Results are an overlay list:
// ↓/↑ move through it, Enter opens, Escape closes, `/` focuses the box from anywhere on the
// page; `?q=` in the page's address opens the search with that query (a shareable link).
(function () {
  "use strict";

  function fold(s) { return s.normalize("NFD").replace(/\p{M}/gu, "").toLowerCase(); }
  function isCjk(c) {
    var n = c.codePointAt(0);
    return (n >= 0x3040 && n <= 0x30FF) || (n >= 0x3100 && n <= 0x312F) || (n >= 0x3400 && n <= 0x4DBF) ||
      (n >= 0x4E00 && n <= 0x9FFF) || (n >= 0xAC00 && n <= 0xD7AF) || (n >= 0xF900 && n <= 0xFAFF) ||
      (n >= 0x20000 && n <= 0x3134F);
  }
  function isWordChar(c) { return /[\p{L}\p{N}]/u.test(c); }

  // Wraps each occurrence of the folded `phrases` in the text under `scope` in <mark>, at most
  // `limit` of them. A phrase of Latin letters must start a word.
  function mark(scope, phrases, limit) {
    if (!phrases.length) { return 0; }
    var walker = document.createTreeWalker(scope, NodeFilter.SHOW_TEXT, {
      acceptNode: function (n) {
        var p = n.parentNode;
        return p && /^(SCRIPT|STYLE|MARK|BUTTON)$/.test(p.nodeName) ? NodeFilter.FILTER_REJECT : NodeFilter.FILTER_ACCEPT;
      }
    });
    var nodes = [], n, count = 0;
    while ((n = walker.nextNode())) { nodes.push(n); }
    for (var i = 0; i < nodes.length && count < limit; i++) {
      var ranges = find(nodes[i].data, phrases);
      for (var j = ranges.length - 1; j >= 0 && count < limit; j--) {
        var node = nodes[i];
        var end = node.splitText(ranges[j][1]);
        var hit = node.splitText(ranges[j][0]);
        var m = document.createElement("mark");
        m.textContent = hit.data;
        hit.parentNode.replaceChild(m, hit);
        count++;
        void end;
      }
    }
    return count;
  }
  // The [start, end) ranges (in `text`'s UTF-16 offsets) of the folded phrases in `text`, in
  // order, not overlapping.
  // Separators between words count as one space (`accumulation_steps` holds
  // "accumulation steps", as the index cuts it).
  function find(text, phrases) {
    var folded = "", at = [];
    var chars = Array.from(text), offset = 0;
    for (var i = 0; i < chars.length; i++) {
      var f = Array.from(fold(chars[i]));
      for (var k = 0; k < f.length; k++) {
        var ch = isWordChar(f[k]) ? f[k] : " ";
        if (ch === " " && folded[folded.length - 1] === " ") { continue; }
        folded += ch;
        for (var u = 0; u < ch.length; u++) { at.push(offset); }
      }
      offset += chars[i].length;
    }
    at.push(offset);
    var ranges = [];
    phrases.forEach(function (p) {
      var from = 0, idx;
      while ((idx = folded.indexOf(p, from)) !== -1) {
        from = idx + p.length;
        var first = Array.from(p)[0];
        if (!isCjk(first) && idx > 0 && isWordChar(folded[idx - 1])) { continue; }
        ranges.push([at[idx], at[idx + p.length]]);
      }
    });
    ranges.sort(function (a, b) { return a[0] - b[0] || b[1] - a[1]; });
    var out = [];
    ranges.forEach(function (r) { if (!out.length || r[0] >= out[out.length - 1][1]) { out.push(r); } });
    return out;
  }
  // Text as find() compares it: folded, each run of separators one space.
  function norm(s) { return fold(s).replace(/[^\p{L}\p{N}]+/gu, " ").trim(); }
  window.vramdocMark = mark;

  // A page opened from a result: `?h=` holds what to highlight (folded, `|`-separated).
  (function () {
    var h = null;
    try { h = new URLSearchParams(window.location.search).get("h"); } catch (e) { return; }
    var scope = document.querySelector("article") || document.querySelector("main");
    if (h && scope) { mark(scope, h.split("|").filter(function (s) { return s.length > 0; }), 300); }
  })();

  var form = document.querySelector("form.site-search");
  if (!form) { return; }
  var input = form.querySelector("input");
  var panel = form.querySelector(".search-panel");
  var status = form.querySelector(".search-status");
  var list = form.querySelector(".search-results");
  var parts = null, loading = false, allKeys = null;
  var MAX_RESULTS = 10, SNIPPET = 160, FULL_TEXT = 600; // FULL_TEXT: src/search/page.rs's EXCERPT_CHARS
  form.hidden = false;

  // The query's terms: {text, cjk} in order (duplicates kept: synonyms match runs).
  function cut(text) {
    var out = [], word = "", run = [];
    function flushRun() {
      if (run.length === 1) { out.push({ text: run[0], cjk: true }); }
      for (var i = 0; i + 1 < run.length; i++) { out.push({ text: run[i] + run[i + 1], cjk: true }); }
      run = [];
    }
    function flushWord() { if (word) { out.push({ text: word, cjk: false }); word = ""; } }
    for (var c of fold(text)) {
      if (isCjk(c)) { flushWord(); run.push(c); }
      else { flushRun(); if (isWordChar(c)) { word += c; } else { flushWord(); } }
    }
    flushRun(); flushWord();
    return out;
  }
  // Runs of terms that are synonym members become the group's token (longest member first).
  function synonyms(ts) {
    var groups = (parts[0] && parts[0].syn) || [], out = [];
    for (var i = 0; i < ts.length;) {
      var best = null;
      groups.forEach(function (g) {
        g.members.forEach(function (m) {
          if (m.length > ts.length - i || (best && best.len >= m.length)) { return; }
          for (var k = 0; k < m.length; k++) { if (ts[i + k].text !== m[k]) { return; } }
          best = { len: m.length, token: g.token, members: g.members };
        });
      });
      if (best) {
        out.push({ text: best.token, cjk: false, token: true, members: best.members });
        i += best.len;
      } else { out.push(ts[i]); i++; }
    }
    return out;
  }
  // The query: its terms (each once) and its quoted phrases (indices of their terms, folded text).
  function parse(query) {
    var pieces = query.split('"'), terms = [], seen = {}, phrases = [];
    function add(t) {
      if (!(t.text in seen)) { seen[t.text] = terms.length; terms.push(t); }
      return seen[t.text];
    }
    pieces.forEach(function (piece, i) {
      // A quoted phrase means its own words: no synonyms inside.
      var quoted = i % 2 === 1 && i < pieces.length - 1;
      var ts = quoted ? cut(piece) : synonyms(cut(piece));
      var idx = ts.map(add);
      if (quoted && ts.length > 1) { phrases.push({ terms: idx, text: norm(piece) }); }
    });
    var open = pieces.length % 2 === 0; // an unclosed quote: still typing the phrase
    var last = terms[terms.length - 1];
    if (last && !last.cjk && !last.token && (!/[\s"]$/.test(query) || open)) { last.prefix = true; }
    return { terms: terms, phrases: phrases };
  }
  // Damerau–Levenshtein distance of a and b, or max + 1 once it is sure to exceed max.
  function distance(a, b, max) {
    if (Math.abs(a.length - b.length) > max) { return max + 1; }
    var prev2 = null, prev = [], cur;
    for (var j = 0; j <= b.length; j++) { prev.push(j); }
    for (var i = 1; i <= a.length; i++) {
      cur = [i];
      var low = i;
      for (j = 1; j <= b.length; j++) {
        var cost = a[i - 1] === b[j - 1] ? 0 : 1;
        var v = Math.min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + cost);
        if (prev2 && i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) { v = Math.min(v, prev2[j - 2] + 1); }
        cur.push(v);
        if (v < low) { low = v; }
      }
      if (low > max) { return max + 1; }
      prev2 = prev; prev = cur;
    }
    return prev[b.length];
  }
  // For a Latin word no guide holds (not even as a prefix, when it may be one): the keys within
  // its edit budget.
  function fuzzy(t) {
    if (t.cjk || t.token || t.text.length < 4) { return null; }
    for (var p = 0; p < parts.length; p++) {
      if (parts[p].terms[t.text]) { return null; }
      if (t.prefix) { for (var k = 0; k < parts[p].keys.length; k++) { if (parts[p].keys[k].startsWith(t.text)) { return null; } } }
    }
    var max = t.text.length >= 7 ? 2 : 1, near = [];
    allKeys.forEach(function (key) {
      if (key[0] !== "~" && !isCjk(key[0]) && distance(t.text, key, max) <= max) { near.push(key); }
    });
    return near;
  }
  // Per section of part `ix`: the weight of term `t` there (the best of the keys it matches; a
  // prefix or a near key counts less).
  function sectionsOf(ix, t) {
    var found = {};
    function add(postings, factor) {
      if (!postings) { return; }
      // Postings (src/search/part.rs, push_posting): -(delta + 1) for weight 1, else delta, weight.
      var sec = 0;
      for (var i = 0; i < postings.length;) {
        var d = postings[i++], w = 1;
        if (d < 0) { sec += -d - 1; } else { sec += d; w = postings[i++]; }
        w *= factor;
        if (!(found[sec] >= w)) { found[sec] = w; }
      }
    }
    add(ix.terms[t.text], 1);
    var lone = t.cjk && Array.from(t.text).length === 1;
    if (t.prefix || lone) {
      for (var k = 0; k < ix.keys.length; k++) {
        var key = ix.keys[k];
        if (key === t.text) { continue; }
        if (key.startsWith(t.text) || (lone && key.endsWith(t.text))) { add(ix.terms[key], 0.5); }
      }
    }
    (t.near || []).forEach(function (key) { add(ix.terms[key], 0.4); });
    return found;
  }
  // The guides of part `ix` holding every term (and each phrase in one section).
  function searchPart(ix, q, results) {
    var docs = {};
    q.terms.forEach(function (t, i) {
      var found = sectionsOf(ix, t);
      for (var sec in found) {
        var d = ix.sections[sec][0];
        var doc = docs[d] || (docs[d] = { has: {}, secs: {} });
        doc.has[i] = Math.max(doc.has[i] || 0, found[sec]);
        var s = doc.secs[sec] || (doc.secs[sec] = { w: 0, terms: {} });
        s.w += found[sec];
        s.terms[i] = true;
      }
    });
    for (var d in docs) {
      var doc = docs[d], score = 0, best = -1, bestScore = -1, ok = true;
      if (Object.keys(doc.has).length !== q.terms.length) { continue; }
      for (var i in doc.has) { score += doc.has[i]; }
      var bonus = {};
      q.phrases.forEach(function (p) {
        var any = false;
        for (var s in doc.secs) {
          if (!p.terms.every(function (t) { return doc.secs[s].terms[t]; })) { continue; }
          // The index keeps a section's text whole up to FULL_TEXT characters: there the phrase
          // itself must occur; in a longer section, its words in the section suffice.
          var raw = ix.sections[s][3] || "", text = " " + norm(raw) + " ";
          if (text.indexOf(isCjk(p.text[0]) ? p.text : " " + p.text + " ") !== -1) { bonus[s] = (bonus[s] || 0) + 100; }
          else if (Array.from(raw).length >= FULL_TEXT) { bonus[s] = (bonus[s] || 0) + 1; }
          else { continue; }
          any = true;
        }
        if (!any) { ok = false; }
      });
      if (!ok) { continue; }
      for (var s in doc.secs) {
        if (q.phrases.length && !bonus[s]) { continue; }
        // A section whose kept text shows the words is preferred (its snippet can mark them;
        // a long section keeps only its start).
        var shown = find(ix.sections[s][3] || "", q.marks).length ? 2 : 0;
        var w = doc.secs[s].w + (bonus[s] || 0) + shown, n = Number(s);
        if (w > bestScore || (w === bestScore && n < best)) { best = n; bestScore = w; }
      }
      results.push({ ix: ix, doc: Number(d), score: score + (bonus[best] || 0), section: best });
    }
  }
  function search(query) {
    var q = parse(query);
    if (!q.terms.length) { return null; }
    q.terms.forEach(function (t) { t.near = fuzzy(t); });
    q.marks = highlights(q, query);
    var results = [];
    parts.forEach(function (ix) { searchPart(ix, q, results); });
    results.sort(function (a, b) { return b.score - a.score || a.ix.part - b.ix.part || a.doc - b.doc; });
    results.marks = q.marks;
    return results;
  }
  // What to mark for a query: its words (and the near keys of a mistyped one), its CJK runs
  // whole, the members of its synonyms and its phrases; longest first.
  function highlights(q, query) {
    var out = [];
    q.terms.forEach(function (t) {
      if (t.token) {
        t.members.forEach(function (m) { out.push(isCjk(m[0][0]) ? unbigram(m) : m.join(" ")); });
      } else if (!t.cjk) { out.push(t.text); (t.near || []).forEach(function (k) { out.push(k); }); }
    });
    (fold(query).match(/[\u3040-\u30ff\u3100-\u312f\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff]+/g) || [])
      .forEach(function (run) { out.push(run); });
    q.phrases.forEach(function (p) { out.push(p.text); });
    return out.filter(function (s, i, a) { return s && a.indexOf(s) === i; })
      .sort(function (a, b) { return b.length - a.length; });
  }
  // A CJK member's text from its bigrams (显存 存不 不足 → 显存不足).
  function unbigram(m) {
    var out = m[0];
    for (var i = 1; i < m.length; i++) { out += Array.from(m[i]).slice(1).join(""); }
    return out;
  }
  // A snippet of `text` around its first marked word, the marks as <mark>.
  function snippet(text, marks, into, whole) {
    var ranges = find(text, marks);
    var start = 0;
    if (!whole && ranges.length && ranges[0][0] > SNIPPET / 3) {
      start = text.lastIndexOf(" ", ranges[0][0] - SNIPPET / 4);
      if (start < 0 || ranges[0][0] - start > SNIPPET / 2) { start = ranges[0][0] - Math.floor(SNIPPET / 4); }
    }
    var end = whole ? text.length : Math.min(text.length, start + SNIPPET);
    if (start > 0) { into.appendChild(document.createTextNode("…")); }
    var at = start;
    ranges.forEach(function (r) {
      if (r[0] < start || r[1] > end) { return; }
      into.appendChild(document.createTextNode(text.slice(at, r[0])));
      var m = document.createElement("mark");
      m.textContent = text.slice(r[0], r[1]);
      into.appendChild(m);
      at = r[1];
    });
    into.appendChild(document.createTextNode(text.slice(at, end) + (end < text.length ? "…" : "")));
    return ranges.length > 0;
  }
  function say(text) { status.textContent = text; }
  function open(on) { panel.hidden = !on; }
  function remember(query) {
    try {
      var url = new URL(window.location.href);
      if (query) { url.searchParams.set("q", query); } else { url.searchParams.delete("q"); }
      url.searchParams.delete("h");
      window.history.replaceState(null, "", url.href);
    } catch (e) { /* file:// may refuse: the box still works */ }
  }
  function show() {
    var query = input.value;
    list.textContent = "";
    if (!query.trim()) { say(""); open(false); return; }
    open(true);
    if (!parts) { load(); return; }
    var results = search(query);
    if (!results) { say(""); return; }
    if (!results.length) { say(form.getAttribute("data-none")); return; }
    say(results.length === 1 ? form.getAttribute("data-one")
      : form.getAttribute("data-many").replace("%n", String(results.length)));
    var base = form.getAttribute("data-base");
    var marks = results.marks;
    results.slice(0, MAX_RESULTS).forEach(function (r) {
      var doc = r.ix.docs[r.doc], sec = r.ix.sections[r.section];
      var li = document.createElement("li");
      var a = document.createElement("a");
      a.href = base + doc[1] + "?h=" + encodeURIComponent(marks.join("|")) +
        (sec[2] ? "#" + encodeURIComponent(sec[2]) : "");
      snippet(doc[0], marks, a, true);
      li.appendChild(a);
      if (sec[1]) {
        var where = document.createElement("span");
        where.className = "search-section";
        where.textContent = " › " + sec[1];
        li.appendChild(where);
      }
      // The snippet: from the matched section, else another section of the guide whose text
      // holds a term, else the description.
      var p = document.createElement("p");
      var text = sec[3] || "";
      if (!(text && find(text, marks).length)) {
        var other = r.ix.sections.filter(function (s) { return s[0] === r.doc && s[3] && find(s[3], marks).length; })[0];
        if (other) { text = other[3]; } else if (doc[2]) { text = doc[2]; }
      }
      snippet(text || doc[2] || "", marks, p);
      if (p.textContent) { li.appendChild(p); }
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
      if (!first || first.v !== 3) { fail(); return; }
      var others = first.parts.filter(function (n) { return n !== 0; });
      var waiting = others.length;
      function ready() {
        var got = window.vramdocSearch.slice().sort(function (a, b) { return a.part - b.part; });
        var keys = {};
        got.forEach(function (ix) { ix.keys = Object.keys(ix.terms); ix.keys.forEach(function (k) { keys[k] = true; }); });
        allKeys = Object.keys(keys);
        parts = got;
        show();
      }
      if (waiting === 0) { ready(); return; }
      others.forEach(function (n) {
        script(n, function () { if (--waiting === 0 && !failed) { ready(); } });
      });
    });
  }
  function links() { return Array.prototype.slice.call(list.querySelectorAll("a")); }
  function go(delta) {
    var all = links();
    if (!all.length) { return; }
    var at = all.indexOf(document.activeElement);
    var next = at + delta;
    if (next < 0) { input.focus(); return; }
    all[Math.min(next, all.length - 1)].focus();
  }
  form.addEventListener("submit", function (e) {
    e.preventDefault();
    var first = links()[0];
    if (first) { window.location.href = first.href; } else { show(); }
  });
  input.addEventListener("input", function () { remember(input.value); show(); });
  input.addEventListener("focus", function () { if (!parts) { load(); } if (input.value.trim()) { open(true); } });
  form.addEventListener("keydown", function (e) {
    if (e.key === "ArrowDown") { e.preventDefault(); go(1); }
    else if (e.key === "ArrowUp") { e.preventDefault(); go(-1); }
    else if (e.key === "Escape") {
      if (panel.hidden) { input.value = ""; remember(""); show(); } else { open(false); }
      input.focus();
    }
  });
  document.addEventListener("click", function (e) { if (!form.contains(e.target)) { open(false); } });
  document.addEventListener("keydown", function (e) {
    if (e.key !== "/" || e.ctrlKey || e.metaKey || e.altKey) { return; }
    var t = e.target;
    if (t && (t.isContentEditable || /^(INPUT|TEXTAREA|SELECT)$/.test(t.nodeName))) { return; }
    e.preventDefault();
    input.focus();
    input.select();
  });
  var asked = null;
  try { asked = new URLSearchParams(window.location.search).get("q"); } catch (e) { asked = null; }
  if (asked) { input.value = asked; input.focus(); show(); }
})();
