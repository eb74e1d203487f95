// Reader-experience checks of a built vramdoc site in headless Chromium (Playwright + axe-core).
//
// Serves the site on 127.0.0.1 and, for the root, every language index, every guide and every
// 404 page, in the light and the dark colour scheme:
//   - axe-core finds no serious or critical violation;
//   - at 390 CSS px wide no page scrolls sideways;
//   - every highlighted code token has at least 4.5:1 contrast against its code block;
//   - every chart the page shows decodes (both schemes, both widths), and at 390 CSS px its
//     smallest text is at least 11 CSS px: the SVG the page picked (a <picture> may pick a
//     narrow drawing) is fetched, its viewBox and font sizes read, and each size scaled by the
//     width the image is rendered at.
// Then, from disk (file://), a guide reaches its translation and shows a chart. Search: `显存` on a
// Chinese page and `memoria` on a Spanish page list the guide whose title holds the word first,
// only guides of the page's language, and lead there, served at the root, under a subpath
// (/sub/) and from file://; the search results pass axe-core in both schemes. Screenshots of a
// guide in each language at 390 and 1280 px in both schemes go to --shots.
//
// Usage: node check.mjs --site DIR [--guide SLUG] [--shots DIR] [--chromium PATH]
// Prints one line per check and "N passed, M failed"; exits 1 on any failure, 2 if it cannot run.

import { axeViolations, launchChromium, serve, SUBPATH, tally, TYPES } from "./common.mjs";
import { createServer } from "node:http";
import { readFile, stat, mkdir, readdir } from "node:fs/promises";
import { createRequire } from "node:module";
import path from "node:path";
import { pathToFileURL } from "node:url";

const LANGS = ["en", "es", "zh"];
const SCHEMES = ["light", "dark"];
const PHONE = { width: 390, height: 844 };
const DESKTOP = { width: 1280, height: 900 };

function parseArgs(argv) {
  const args = { site: null, guide: null, shots: null, chromium: process.env.CHROMIUM || "/usr/bin/chromium" };
  for (let i = 2; i < argv.length; i += 2) {
    const key = argv[i].replace(/^--/, "");
    if (!(key in args)) throw new Error(`unknown option ${argv[i]}`);
    args[key] = argv[i + 1];
  }
  if (!args.site) throw new Error("--site DIR is required");
  return args;
}

const { check, finish } = tally({ verbose: true });

/** The guide slugs of a language, from its folder: the folders with a page (not search/). */
async function guides(site, lang) {
  const entries = await readdir(path.join(site, lang), { withFileTypes: true });
  const folders = entries.filter((e) => e.isDirectory()).map((e) => e.name).sort();
  const withPage = await Promise.all(folders.map((f) => stat(path.join(site, lang, f, "index.html")).then(() => true, () => false)));
  return folders.filter((_, i) => withPage[i]);
}

/** The guides of one language in index order, as `<lang>/guides.js` lists them. */
async function indexOrder(site, lang) {
  const text = await readFile(path.join(site, lang, "guides.js"), "utf8");
  return JSON.parse(text.replace(/^window\.vramdocGuides = /, "").replace(/;\s*$/, "")).map((g) => g.s);
}

/** Code tokens below 4.5:1 against their block's background (WCAG 2 relative luminance). */
async function lowContrastTokens(page) {
  return page.evaluate(() => {
    const rgb = (s) => s.match(/[\d.]+/g).slice(0, 3).map(Number);
    const lum = ([r, g, b]) => {
      const f = (c) => { c /= 255; return c <= 0.03928 ? c / 12.92 : ((c + 0.055) / 1.055) ** 2.4; };
      return 0.2126 * f(r) + 0.7152 * f(g) + 0.0722 * f(b);
    };
    const ratio = (a, b) => { const [x, y] = [lum(a), lum(b)]; return (Math.max(x, y) + 0.05) / (Math.min(x, y) + 0.05); };
    const bad = [];
    for (const pre of document.querySelectorAll("pre")) {
      const bg = rgb(getComputedStyle(pre).backgroundColor);
      for (const el of [pre, ...pre.querySelectorAll("span")]) {
        if (!el.textContent.trim()) continue;
        const r = ratio(rgb(getComputedStyle(el).color), bg);
        if (r < 4.5) bad.push(`${el.className || "pre"} "${el.textContent.trim().slice(0, 20)}" ${r.toFixed(2)}:1`);
      }
    }
    return bad;
  });
}

/** Smallest chart text on a phone must be at least this many CSS px. */
const MIN_CHART_PX = 11;

/** The charts the loaded page shows: the SVG each <img> picked, its rendered width, whether it decoded. */
async function chartImages(page) {
  return page.evaluate(() => [...document.images]
    .filter((i) => (i.currentSrc || i.src).split(/[?#]/)[0].endsWith(".svg") && !i.closest("header, footer"))
    .map((i) => ({ src: i.currentSrc || i.src, width: i.clientWidth, decoded: i.complete && i.naturalWidth > 0 })));
}

/** The smallest font size in an SVG document, in user units, and its viewBox width. */
function svgTextSizes(svg) {
  const viewBox = svg.match(/<svg[^>]*\sviewBox="([^"]+)"/);
  const width = viewBox ? Number(viewBox[1].trim().split(/[\s,]+/)[2])
    : Number((svg.match(/<svg[^>]*\swidth="([\d.]+)"/) || [])[1]);
  const sizes = [...svg.matchAll(/font-size[=:]\s*"?([\d.]+)/g)].map((m) => Number(m[1]));
  return { viewWidth: width, smallest: sizes.length ? Math.min(...sizes) : Infinity, count: sizes.length };
}

/** Charts of the loaded page whose text renders below MIN_CHART_PX, as "file: N px" lines, and
 * the smallest rendered size of any chart text on the page. */
async function smallChartText(page, charts) {
  const bad = [];
  let least = Infinity;
  for (const chart of charts) {
    const svg = await page.evaluate(async (src) => (await fetch(src)).text(), chart.src);
    const { viewWidth, smallest, count } = svgTextSizes(svg);
    const name = chart.src.split("/").slice(-1)[0];
    if (!(viewWidth > 0) || count === 0) { bad.push(`${name}: no viewBox or no text sizes`); continue; }
    const rendered = smallest * chart.width / viewWidth;
    least = Math.min(least, rendered);
    if (rendered < MIN_CHART_PX) bad.push(`${name}: ${rendered.toFixed(1)} px (font-size ${smallest} of ${viewWidth} units shown ${chart.width} px wide)`);
  }
  return { bad, least };
}

/** Case- and accent-folded text, as the search folds it. */
const fold = (s) => s.normalize("NFD").replace(/\p{M}/gu, "").toLowerCase();

/**
 * Types `query` into the search box of the page at `url` and checks the results: the first is a
 * guide whose title holds the query, all are in the page's language, and the first link leads to
 * that guide (and to its section, when it names one). Leaves the page on the results.
 */
async function searchCheck(page, url, query, where) {
  await page.goto(url, { waitUntil: "load" });
  const lang = await page.evaluate(() => document.documentElement.lang);
  await page.fill("#site-search-q", query);
  // Until the index has loaded and the status says how many guides were found (or none).
  await page.waitForFunction(() => {
    const text = document.querySelector(".search-status")?.textContent || "";
    return text !== "" && !text.endsWith("…");
  }, null, { timeout: 10000 }).catch(() => {});
  const results = await page.evaluate(() => [...document.querySelectorAll(".search-results li a")]
    .map((a) => ({ title: a.textContent, href: a.href })));
  const status = await page.evaluate(() => document.querySelector(".search-status")?.textContent);
  if (!check(results.length > 0, `${where}: search "${query}" finds guides`, `status "${status}"`)) return;
  check(fold(results[0].title).includes(fold(query)), `${where}: search "${query}" lists a guide with it in its title first`,
    results.map((r) => r.title).join(" | "));
  const foreign = results.filter((r) => !new URL(r.href).pathname.includes(`/${lang}/`));
  check(foreign.length === 0, `${where}: search "${query}" lists only ${lang} guides`, foreign.map((r) => r.href).join(", "));
  const target = new URL(results[0].href);
  await page.click(".search-results li a");
  await page.waitForLoadState("load");
  const landed = await page.evaluate((id) => ({
    lang: document.documentElement.lang,
    title: document.querySelector("h1")?.textContent,
    section: id ? Boolean(document.getElementById(id)) : true,
  }), decodeURIComponent(target.hash.slice(1)));
  check(landed.lang === lang && landed.title === results[0].title && landed.section,
    `${where}: search "${query}": the first result leads to its guide${target.hash ? " and section" : ""}`,
    `at ${page.url()}: ${JSON.stringify(landed)}`);
  await page.goBack({ waitUntil: "load" }).catch(() => {});
}

async function main() {
  const args = parseArgs(process.argv);
  const site = path.resolve(args.site);
  const server = await serve(site);
  const origin = `http://127.0.0.1:${server.address().port}`;
  const browser = await launchChromium(args.chromium);
  try {
    const slugs = await guides(site, "en");
    const guide = args.guide || slugs[0];
    const pages = ["/", "/404.html", ...LANGS.flatMap((l) => [`/${l}/`, `/${l}/404.html`, ...slugs.map((s) => `/${l}/${s}/`)])];
    for (const scheme of SCHEMES) {
      for (const viewport of [DESKTOP, PHONE]) {
        const context = await browser.newContext({ viewport, colorScheme: scheme });
        const page = await context.newPage();
        for (const url of pages) {
          const where = `${url} (${scheme}, ${viewport.width} px)`;
          await page.goto(origin + url, { waitUntil: "load" });
          const charts = await chartImages(page);
          if (charts.length > 0) {
            const broken = charts.filter((c) => !c.decoded).map((c) => c.src.split("/").slice(-1)[0]);
            check(broken.length === 0, `${where}: ${charts.length} charts decode`, `not decoded: ${broken.join(", ")}`);
            if (viewport === PHONE) {
              const { bad, least } = await smallChartText(page, charts);
              check(bad.length === 0, `${where}: chart text at ${MIN_CHART_PX} CSS px or more (smallest ${least.toFixed(1)} px)`,
                bad.join("; "));
            }
          }
          if (viewport === PHONE) {
            const { scroll, width } = await page.evaluate(() => ({ scroll: document.documentElement.scrollWidth, width: innerWidth }));
            check(scroll <= width, `${where}: no sideways scrolling`, `content is ${scroll} px wide`);
          } else {
            const violations = await axeViolations(page);
            check(violations.length === 0, `${where}: no serious or critical axe-core violations`,
              violations.map((v) => `${v.id} (${v.impact}) at ${v.nodes.join(", ")}`).join("; "));
            const low = await lowContrastTokens(page);
            check(low.length === 0, `${where}: code tokens at 4.5:1 or more`, low.slice(0, 5).join("; "));
          }
        }
        if (args.shots) {
          await mkdir(args.shots, { recursive: true });
          for (const lang of LANGS) {
            await page.goto(`${origin}/${lang}/${guide}/`, { waitUntil: "load" });
            const file = path.join(args.shots, `${lang}-${guide}-${viewport.width}-${scheme}.png`);
            await page.screenshot({ path: file, fullPage: viewport === PHONE });
          }
        }
        await context.close();
      }
    }

    // From disk: the output must work when someone unzips it and opens a page.
    const context = await browser.newContext({ viewport: DESKTOP });
    const page = await context.newPage();
    const start = pathToFileURL(path.join(site, "en", guide, "index.html")).href;
    await page.goto(start, { waitUntil: "load" });
    await page.click('nav.lang-switch a[hreflang="es"]');
    await page.waitForLoadState("load");
    const lang = await page.evaluate(() => document.documentElement.lang);
    check(lang === "es" && page.url().startsWith("file:"), "file://: the language switcher reaches the Spanish page", `at ${page.url()}, lang ${lang}`);
    const charts = await page.evaluate(() => [...document.images].filter((i) => i.src.endsWith(".svg")).map((i) => i.naturalWidth));
    check(charts.length > 0 && charts.every((w) => w > 0), "file://: the charts load", `natural widths ${charts}`);
    await page.click("a.site-title");
    await page.waitForLoadState("load");
    check(page.url().endsWith("/es/index.html"), "file://: the site title leads to the language index, not a folder listing", page.url());

    // Previous/next and the guide list, from disk and served, in both schemes (axe-core on the
    // opened list).
    for (const lang of ["zh", "en"]) {
      const all = await indexOrder(site, lang);
      check(JSON.stringify([...all].sort()) === JSON.stringify(await guides(site, lang)), `/${lang}/guides.js lists every guide of the language`);
      for (const [base, where] of [[pathToFileURL(site).href, "file://"], [origin, "served"]]) {
        await page.goto(`${base}/${lang}/${all[0]}/index.html`, { waitUntil: "load" });
        await page.click("details.all-guides summary");
        await page.waitForSelector(".all-guides-list li", { timeout: 10000 }).catch(() => {});
        const listed = await page.evaluate(() => [...document.querySelectorAll(".all-guides-list li")].map((li) => li.textContent));
        const current = await page.evaluate(() => document.querySelectorAll('.all-guides-list [aria-current="page"]').length);
        check(listed.length === all.length && current === 1, `${where} /${lang}/${all[0]}/: the guide list shows all ${all.length} guides, this one marked`,
          `listed ${listed.length}, marked ${current}`);
        if (where === "served") {
          for (const scheme of SCHEMES) {
            await page.emulateMedia({ colorScheme: scheme });
            const violations = await axeViolations(page);
            check(violations.length === 0, `/${lang}/${all[0]}/ with the guide list open (${scheme}): no serious or critical axe-core violations`,
              violations.map((v) => `${v.id} (${v.impact}) at ${v.nodes.join(", ")}`).join("; "));
          }
          await page.emulateMedia({ colorScheme: "light" });
        }
        if (all.length > 1) {
          await page.click(".all-guides-list a");
          await page.waitForLoadState("load");
          check(page.url().endsWith(`/${lang}/${all[1]}/index.html`), `${where} /${lang}/: the list's first link opens the next guide`, page.url());
          await page.click('a[rel="prev"]');
          await page.waitForLoadState("load");
          check(page.url().endsWith(`/${lang}/${all[0]}/index.html`), `${where} /${lang}/: "previous" leads back`, page.url());
          await page.click('a[rel="next"]');
          await page.waitForLoadState("load");
          check(page.url().endsWith(`/${lang}/${all[1]}/index.html`), `${where} /${lang}/: "next" follows the index order`, page.url());
        }
      }
    }

    // Search, from disk, served at the root and under a subpath.
    const searches = [["zh", "显存"], ["es", "memoria"]];
    for (const [lang, query] of searches) {
      await searchCheck(page, pathToFileURL(path.join(site, lang, guide, "index.html")).href, query, `file:// /${lang}/${guide}/`);
      await searchCheck(page, `${origin}/${lang}/`, query, `/${lang}/`);
      await searchCheck(page, `${origin}${SUBPATH}/${lang}/${guide}/`, query, `${SUBPATH}/${lang}/${guide}/`);
    }
    await context.close();

    // The search box and its results pass axe-core in both schemes.
    for (const scheme of SCHEMES) {
      const ctx = await browser.newContext({ viewport: DESKTOP, colorScheme: scheme });
      const p = await ctx.newPage();
      for (const [lang, query] of searches) {
        await p.goto(`${origin}/${lang}/`, { waitUntil: "load" });
        await p.fill("#site-search-q", query);
        await p.waitForSelector(".search-results li", { timeout: 10000 }).catch(() => {});
        const violations = await axeViolations(p);
        check(violations.length === 0, `/${lang}/ with results for "${query}" (${scheme}): no serious or critical axe-core violations`,
          violations.map((v) => `${v.id} (${v.impact}) at ${v.nodes.join(", ")}`).join("; "));
      }
      if (args.shots) {
        await p.screenshot({ path: path.join(args.shots, `search-es-${scheme}.png`) });
      }
      await ctx.close();
    }
  } finally {
    await browser.close();
    server.close();
  }
  finish();
}

main().catch((e) => { console.error(`error: ${e.stack || e}`); process.exit(2); });
