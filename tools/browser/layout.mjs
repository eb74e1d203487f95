// Layout checks of a built vramdoc site in headless Chromium (Playwright + axe-core), as a reader
// sees the pages at 390, 768 and 1280 CSS px in the light and the dark scheme:
//   - options tables: every setting of the Change column on one line and never broken inside,
//     one setting per line; on phones and tablets the table is cards, at 1280 px it fits whole;
//     whatever scrolls sideways carries the cue (class `overflows`, a shadow);
//   - the short answer under a guide's title: inside the first screen, a verdict, a copyable
//     config and links whose targets exist; on phones the contents list is collapsed;
//   - message and log blocks wrap (no line cut at the right edge);
//   - at 1280 px: a sticky "On this page" column marking the section being read, a theme button
//     that overrides the system's scheme and is remembered, a skip link;
//   - search: "OOM" in every language, 爆显存, the typo "logts", a quoted phrase, a figure of a
//     guide's table; the snippet
//     marks the terms, the results overlay the page (nothing moves), ↓ and Enter open a result,
//     the target page marks the terms, `/` focuses the box, `?q=` opens it;
//   - print: no search, switcher or copy buttons, no code or table cut at the right;
//   - the 404 pages work from file:// and under a subpath; exact byte counts show on a tap; a
//     failed copy says so; the root language chooser says what the site is;
//   - axe-core finds no serious or critical violation on any of these states.
// Screenshots go to --shots (layout-*.png).
//
// Usage: node layout.mjs --site DIR [--shots DIR] [--chromium PATH]

import { axeViolations, launchChromium, serve, SUBPATH, tally, TYPES } from "./common.mjs";
import { createServer } from "node:http";
import { readFile, stat, mkdir } from "node:fs/promises";
import { createRequire } from "node:module";
import path from "node:path";
import { pathToFileURL } from "node:url";

const LANGS = ["en", "es", "zh"];
const SCHEMES = ["light", "dark"];
const WIDTHS = [390, 768, 1280];
const HEIGHT = { 390: 844, 768: 1024, 1280: 900 };
const GUIDE = "oom-124m-on-12gb";
const LOG_GUIDE = "logits-buffer-oom";

function parseArgs(argv) {
  const args = { site: null, shots: null, chromium: process.env.CHROMIUM || "/usr/bin/chromium" };
  for (let i = 2; i < argv.length; i += 2) {
    const key = argv[i].replace(/^--/, "");
    if (!(key in args)) throw new Error(`unknown option ${argv[i]}`);
    args[key] = argv[i + 1];
  }
  if (!args.site) throw new Error("--site DIR is required");
  return args;
}

const { check, finish } = tally({ verbose: true });

async function axeClean(page, where) {
  const v = await axeViolations(page);
  check(v.length === 0, `${where}: no serious or critical axe-core violations`, v.map((x) => `${x.id} at ${x.nodes.join(", ")}`).join("; "));
}

/** What a reader sees of a guide page's layout, measured in the page. */
async function measure(page) {
  return page.evaluate(() => {
    const lineHeight = (el) => parseFloat(getComputedStyle(el).lineHeight) || parseFloat(getComputedStyle(el).fontSize) * 1.6;
    const table = document.getElementById("options");
    const out = { hasTable: Boolean(table), broken: [], sharedLines: [], scrollsWithoutCue: [], cards: false, tableFits: true };
    if (table) {
      out.cards = getComputedStyle(table.querySelector("tr")).display === "block";
      out.tableFits = table.scrollWidth <= table.clientWidth + 1;
      for (const td of table.querySelectorAll("td[data-label]")) {
        const codes = [...td.querySelectorAll(":scope > code")];
        const tops = [];
        for (const c of codes) {
          // One line box: a single client rect no taller than a line.
          const rects = c.getClientRects();
          if (rects.length !== 1 || rects[0].height > lineHeight(c) * 1.2) out.broken.push(`${c.textContent} (${rects.length} boxes)`);
          tops.push(Math.round(c.getBoundingClientRect().top));
        }
        if (new Set(tops).size !== tops.length) out.sharedLines.push(codes.map((c) => c.textContent).join(" + "));
      }
    }
    for (const el of document.querySelectorAll(".table-wrap, pre")) {
      if (el.scrollWidth - el.clientWidth > 1 && !el.classList.contains("overflows")) {
        out.scrollsWithoutCue.push(el.className || el.nodeName);
      }
    }
    const answer = document.querySelector(".answer");
    out.answer = answer && {
      top: answer.getBoundingClientRect().top + scrollY,
      verdictBottom: answer.querySelector(".answer-verdict").getBoundingClientRect().bottom + scrollY,
      config: answer.querySelector(".answer-config")?.textContent || "",
      copy: Boolean(answer.querySelector(".answer-config")?.parentNode.querySelector(".copy-code")),
      targets: [...answer.querySelectorAll(".answer-links a")].map((a) => Boolean(document.getElementById(a.getAttribute("href").slice(1)))),
    };
    const toc = document.querySelector(".toc details");
    out.tocOpen = toc ? toc.open : null;
    const nav = document.querySelector(".toc");
    const content = document.querySelector(".content");
    out.tocBeside = nav && content ? nav.getBoundingClientRect().left >= content.getBoundingClientRect().right : false;
    out.tocSticky = nav ? getComputedStyle(nav).position === "sticky" : false;
    out.sideways = document.documentElement.scrollWidth > innerWidth;
    out.height = innerHeight;
    return out;
  });
}

async function guideLayout(page, origin, lang, width, scheme, shots) {
  const where = `/${lang}/${GUIDE}/ (${width} px, ${scheme})`;
  await page.goto(`${origin}/${lang}/${GUIDE}/`, { waitUntil: "load" });
  const m = await measure(page);
  check(m.hasTable, `${where}: the options table has its id`);
  check(m.broken.length === 0, `${where}: no setting is broken inside`, m.broken.slice(0, 4).join("; "));
  check(m.sharedLines.length === 0, `${where}: one setting per line`, m.sharedLines.slice(0, 3).join("; "));
  if (width < 1100) check(m.cards, `${where}: the options table is cards`);
  else check(!m.cards && m.tableFits, `${where}: the options table is a table that fits without scrolling`);
  check(m.scrollsWithoutCue.length === 0, `${where}: whatever scrolls sideways shows a cue`, m.scrollsWithoutCue.join(", "));
  check(!m.sideways, `${where}: the page does not scroll sideways`);
  check(m.answer && m.answer.verdictBottom <= m.height, `${where}: the short answer's verdict is on the first screen`,
    JSON.stringify(m.answer));
  check(m.answer && /batch_size = \d+/.test(m.answer.config) && m.answer.copy, `${where}: the short answer has a config to copy`);
  check(m.answer && m.answer.targets.length === 2 && m.answer.targets.every(Boolean), `${where}: the short answer links the table and the charts`);
  if (width < 1100) check(m.tocOpen === false, `${where}: the contents list is collapsed`);
  else check(m.tocOpen && m.tocBeside && m.tocSticky, `${where}: the contents are a sticky column beside the text`, JSON.stringify(m));
  await axeClean(page, where);
  if (shots) {
    await page.screenshot({ path: path.join(shots, `layout-${lang}-${width}-${scheme}.png`) });
    await page.locator("#options").scrollIntoViewIfNeeded();
    await page.screenshot({ path: path.join(shots, `layout-${lang}-${width}-${scheme}-options.png`) });
  }
}

async function logsWrap(page, origin, width, scheme, shots) {
  const where = `/en/${LOG_GUIDE}/ (${width} px, ${scheme})`;
  await page.goto(`${origin}/en/${LOG_GUIDE}/`, { waitUntil: "load" });
  const logs = await page.evaluate(() => [...document.querySelectorAll('pre[data-lang="text"]')]
    .map((p) => ({ cut: p.scrollWidth - p.clientWidth > 1, text: p.textContent.slice(0, 40) })));
  check(logs.length > 0 && logs.every((l) => !l.cut), `${where}: messages and logs wrap, none is cut`, JSON.stringify(logs));
  if (shots && width === 390) {
    await page.locator('pre[data-lang="text"]').first().scrollIntoViewIfNeeded();
    await page.screenshot({ path: path.join(shots, `layout-log-${width}-${scheme}.png`) });
  }
}

async function desktop(browser, origin) {
  const ctx = await browser.newContext({ viewport: { width: 1280, height: 900 }, colorScheme: "dark" });
  const page = await ctx.newPage();
  await page.goto(`${origin}/en/${GUIDE}/`, { waitUntil: "load" });
  // The section being read is marked in the contents.
  const id = await page.evaluate(() => document.querySelectorAll(".content h2")[3].id);
  await page.evaluate((i) => document.getElementById(i).scrollIntoView(), id);
  await page.waitForTimeout(200);
  const current = await page.evaluate(() => document.querySelector('.toc a[aria-current]')?.getAttribute("href"));
  check(current === `#${id}`, "1280 px: the contents mark the section being read", `${current} for #${id}`);
  const tocTop = await page.evaluate(() => document.querySelector(".toc").getBoundingClientRect().top);
  check(tocTop >= 0 && tocTop < 100, "1280 px: the contents column stays in view while scrolling", `top ${tocTop}`);
  // The skip link is the first thing Tab reaches, shown when focused, and leads to the main text.
  await page.goto(`${origin}/en/${GUIDE}/`, { waitUntil: "load" });
  await page.keyboard.press("Tab");
  const skip = await page.evaluate(() => ({ cls: document.activeElement.className, top: document.activeElement.getBoundingClientRect().top }));
  check(skip.cls === "skip-link" && skip.top >= 0, "the first Tab reaches a visible skip link", JSON.stringify(skip));
  await page.keyboard.press("Enter");
  check(await page.evaluate(() => document.activeElement.id === "main"), "the skip link moves focus to the main text");
  // The theme button overrides the system's dark scheme and is remembered.
  const bg = () => page.evaluate(() => getComputedStyle(document.body).backgroundColor);
  const dark = await bg();
  await page.click(".theme-toggle"); // system → light
  const light = await bg();
  check(dark !== light && light === "rgb(255, 255, 255)", "the theme button switches a dark system to light", `${dark} → ${light}`);
  await page.reload({ waitUntil: "load" });
  check((await bg()) === light, "the theme choice is remembered on the next page");
  await axeClean(page, "1280 px, light chosen over a dark system");
  await page.click(".theme-toggle"); // light → dark
  await page.click(".theme-toggle"); // dark → system
  check(await page.evaluate(() => !document.documentElement.hasAttribute("data-theme") && !localStorage.getItem("vramdoc-theme")),
    "the third press goes back to the system's scheme");
  await ctx.close();
}

/** Types `query`, waits for the status, returns the results. */
async function searchFor(page, query) {
  await page.fill("#site-search-q", query);
  await page.waitForFunction(() => {
    const text = document.querySelector(".search-status")?.textContent || "";
    return text !== "" && !text.endsWith("…");
  }, null, { timeout: 10000 }).catch(() => {});
  return page.evaluate(() => [...document.querySelectorAll(".search-results li")].map((li) => ({
    title: li.querySelector("a").textContent, href: li.querySelector("a").href,
    marks: [...li.querySelectorAll("p mark")].map((m) => m.textContent),
    titleMarks: [...li.querySelectorAll("a mark")].map((m) => m.textContent),
  })));
}

async function searching(browser, origin, site, shots) {
  for (const scheme of SCHEMES) {
    const ctx = await browser.newContext({ viewport: { width: 390, height: 844 }, colorScheme: scheme });
    const page = await ctx.newPage();
    for (const [lang, query] of [["en", "OOM"], ["es", "OOM"], ["zh", "OOM"], ["zh", "爆显存"], ["en", "logts"],
      ["es", "sin memoria"], ["en", '"gradient accumulation"'], ["en", "cuda out of memory"]]) {
      await page.goto(`${origin}/${lang}/`, { waitUntil: "load" });
      const h1 = await page.evaluate(() => document.querySelector("h1").getBoundingClientRect().top);
      const results = await searchFor(page, query);
      const where = `/${lang}/ search ${query} (${scheme})`;
      check(results.length > 0, `${where}: finds guides`);
      if (!results.length) continue;
      check(results.every((r) => r.marks.length > 0), `${where}: every snippet marks the terms`, JSON.stringify(results.filter((r) => !r.marks.length)));
      const moved = await page.evaluate(() => document.querySelector("h1").getBoundingClientRect().top);
      check(moved === h1, `${where}: the results overlay the page (nothing moves)`, `${h1} → ${moved}`);
      if (lang === "zh" && query === "爆显存") {
        await axeClean(page, `${where} results open`);
        if (shots) await page.screenshot({ path: path.join(shots, `layout-search-zh-390-${scheme}.png`) });
      }
      if (query === "logts") {
        // Arrow down, Enter: the first result opens, its terms marked.
        await page.focus("#site-search-q");
        await page.keyboard.press("ArrowDown");
        const focused = await page.evaluate(() => document.activeElement.closest(".search-results") !== null);
        check(focused, `${where}: ↓ moves to the first result`);
        await Promise.all([page.waitForURL((u) => u.pathname.endsWith("/index.html"), { waitUntil: "load" }), page.keyboard.press("Enter")]);
        const marks = await page.evaluate(() => [...document.querySelectorAll("article mark")].map((m) => m.textContent.toLowerCase()));
        check(page.url().includes(results[0].href.split("#")[0].split("/").slice(-2)[0]) && marks.includes("logits"),
          `${where}: Enter opens the result, "logits" marked there`, `${page.url()} ${marks.slice(0, 5)}`);
        if (shots && scheme === "light") await page.screenshot({ path: path.join(shots, "layout-search-target-390.png") });
      }
    }
    // A figure the guide's table computes, searched as a quoted phrase, finds the guide.
    await page.goto(`${origin}/en/${GUIDE}/`, { waitUntil: "load" });
    const figure = await page.evaluate(() => document.querySelector("table td .figure")?.textContent.replace(/\u00a0/g, " "));
    if (check(!!figure, `/en/${GUIDE}/ shows a computed figure in a table`)) {
      await page.goto(`${origin}/en/`, { waitUntil: "load" });
      const found = await searchFor(page, `"${figure}"`);
      check(found.some((r) => r.href.includes(`/${GUIDE}/`)), `/en/ search "${figure}" (a figure of ${GUIDE}'s table) finds it (${scheme})`,
        JSON.stringify(found.map((r) => r.href)));
    }
    // `/` focuses the box from anywhere; ?q= opens the search with its query.
    await page.goto(`${origin}/en/${GUIDE}/`, { waitUntil: "load" });
    await page.click("h1");
    await page.keyboard.press("/");
    check(await page.evaluate(() => document.activeElement.id === "site-search-q"), `"/" focuses the search box (${scheme})`);
    for (const base of [origin, pathToFileURL(site).href]) {
      await page.goto(`${base}/es/index.html?q=oom`, { waitUntil: "load" });
      await page.waitForSelector(".search-results li", { timeout: 10000 }).catch(() => {});
      const n = await page.evaluate(() => ({ open: !document.querySelector(".search-panel").hidden, n: document.querySelectorAll(".search-results li").length, q: document.querySelector("#site-search-q").value }));
      check(n.open && n.n > 0 && n.q === "oom", `${base.slice(0, 7)} /es/?q=oom opens the search with its results (${scheme})`, JSON.stringify(n));
    }
    await ctx.close();
  }
}

async function smaller(browser, origin, site, shots) {
  const ctx = await browser.newContext({ viewport: { width: 390, height: 844 }, hasTouch: true });
  const page = await ctx.newPage();
  // Print: no controls, nothing cut.
  await page.goto(`${origin}/en/${LOG_GUIDE}/`, { waitUntil: "load" });
  await page.emulateMedia({ media: "print" });
  const print = await page.evaluate(() => ({
    shown: [...document.querySelectorAll(".site-search, .lang-switch, .copy-code, .theme-toggle")].filter((e) => e.getClientRects().length > 0).length,
    cut: [...document.querySelectorAll("pre, .table-wrap")].filter((e) => e.scrollWidth - e.clientWidth > 1).length,
  }));
  check(print.shown === 0 && print.cut === 0, "print: no search, switcher or copy buttons; no code or table cut", JSON.stringify(print));
  if (shots) await page.screenshot({ path: path.join(shots, "layout-print-390.png"), fullPage: true });
  await page.emulateMedia({ media: "screen" });
  // Exact bytes on a tap.
  await page.goto(`${origin}/en/${GUIDE}/`, { waitUntil: "load" });
  await page.locator(".content .figure").first().tap();
  const exact = await page.evaluate(() => document.querySelector(".content .figure-exact")?.textContent || "");
  check(/\d[\d,]* bytes/.test(exact), "a tap on a figure shows its exact bytes", exact);
  // A failed copy says so.
  await page.evaluate(() => {
    Object.defineProperty(navigator, "clipboard", { value: { writeText: () => Promise.reject(new Error("denied")) } });
    document.execCommand = () => false;
  });
  await page.locator(".answer .copy-code").first().click();
  const said = await page.locator(".answer .copy-code").first().textContent();
  check(said !== "Copy" && said !== "Copied" && /fail/i.test(said), "a failed copy says so", said);
  await ctx.close();
  // 404 pages: relative links, from disk and served under a subpath at depth.
  const p2ctx = await browser.newContext({ viewport: { width: 768, height: 1024 } });
  const p2 = await p2ctx.newPage();
  for (const url of [pathToFileURL(path.join(site, "en", "404.html")).href, pathToFileURL(path.join(site, "404.html")).href,
    `${origin}${SUBPATH}/en/no/such/page/`, `${origin}${SUBPATH}/zh/missing.html`]) {
    await p2.goto(url, { waitUntil: "load" });
    const r = await p2.evaluate(() => ({
      styled: getComputedStyle(document.querySelector("main")).maxWidth !== "none",
      links: [...document.querySelectorAll("main a, header a.site-title")].map((a) => a.href),
    }));
    const bad = [];
    for (const href of r.links) {
      if (href.startsWith("file:")) { if (!(await stat(new URL(href)).catch(() => null))) bad.push(href); continue; }
      const res = await p2.request.get(href);
      if (res.status() !== 200 || (url.includes(SUBPATH) && !new URL(href).pathname.startsWith(SUBPATH))) bad.push(href);
    }
    check(r.styled && r.links.length > 1 && bad.length === 0, `404 page at ${url.replace(/^.*?(\/sub|\/[^/]+\/404)/, "$1")}: styled, its links resolve`, bad.join(", "));
  }
  // The root chooser says what the site is, in each language.
  await p2.goto(`${origin}/`, { waitUntil: "load" });
  const about = await p2.evaluate(() => [...document.querySelectorAll(".language-chooser .about")].map((e) => e.textContent.length));
  check(about.length === LANGS.length && about.every((n) => n > 30), "the root chooser says what the site is in each language", JSON.stringify(about));
  await axeClean(p2, "the root chooser");
  await p2ctx.close();
}

async function main() {
  const args = parseArgs(process.argv);
  const site = path.resolve(args.site);
  const server = await serve(site);
  const origin = `http://127.0.0.1:${server.address().port}`;
  if (args.shots) await mkdir(args.shots, { recursive: true });
  const browser = await launchChromium(args.chromium);
  try {
    for (const scheme of SCHEMES) {
      for (const width of WIDTHS) {
        const ctx = await browser.newContext({ viewport: { width, height: HEIGHT[width] }, colorScheme: scheme });
        const page = await ctx.newPage();
        for (const lang of LANGS) await guideLayout(page, origin, lang, width, scheme, args.shots);
        await logsWrap(page, origin, width, scheme, args.shots);
        await ctx.close();
      }
    }
    await desktop(browser, origin);
    await searching(browser, origin, site, args.shots);
    await smaller(browser, origin, site, args.shots);
  } finally {
    await browser.close();
    server.close();
  }
  finish();
}

main().catch((e) => { console.error(`error: ${e.stack || e}`); process.exit(2); });
