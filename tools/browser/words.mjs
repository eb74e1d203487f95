// What a reader sees of issue 23's words, in headless Chromium (Playwright), for every guide in
// every language at 390, 768 and 1280 CSS px, light and dark:
//   - every options table has a last column labelled as the verdict ("Verdict", "Veredicto",
//     "结论"), each of its cells carries that label (the phone cards show it) and is rendered;
//     no option label glues names together with " / ";
//   - the breakdown table has a row labelled as the verdict whose "share of peak" cell is empty;
//   - the rule of the four verdicts (the locale's `verdict-rule`) is on the page and rendered;
//   - every sweep chart has a caption under it stating that the marker is the largest value
//     whose high end fits, and block-size charts say they offer multiples of 64; a generate
//     guide (its charts are of context length) has no options table, breakdown or sweep, and
//     each context chart's caption states the longest fit's rule;
//   - the page's prose (code left out) holds no variant the language's glossary
//     (locales/glossary/<lang>.yaml) rejects; Chinese prose has no thousands-grouped number and
//     no space between a number and its measure word; Spanish prose no "mil M".
// The expected words are read from the repository's locale bundles and glossaries, so the
// check follows them.
//
// Usage: node words.mjs --site DIR [--chromium PATH]
// Prints one line per check and "N passed, M failed"; exits 1 on any failure, 2 if it cannot run.

import { axeViolations, launchChromium, serve, SUBPATH, tally, TYPES } from "./common.mjs";
import { createServer } from "node:http";
import { readFile, stat, readdir } from "node:fs/promises";
import path from "node:path";
import { fileURLToPath } from "node:url";

const REPO = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
const LANGS = ["en", "es", "zh"];
const SCHEMES = ["light", "dark"];
const WIDTHS = [390, 768, 1280];

function parseArgs(argv) {
  const args = { site: null, chromium: process.env.CHROMIUM || "/usr/bin/chromium" };
  for (let i = 2; i < argv.length; i += 2) {
    const key = argv[i].replace(/^--/, "");
    if (!(key in args)) throw new Error(`unknown option ${argv[i]}`);
    args[key] = argv[i + 1];
  }
  if (!args.site) throw new Error("--site DIR is required");
  return args;
}

/** The messages of a language's bundles: `key = value` lines (no multi-line values needed here). */
async function messages(lang) {
  const out = {};
  for (const file of ["guide.ftl", "estimate.ftl"]) {
    const text = await readFile(path.join(REPO, "locales", lang, file), "utf8");
    for (const line of text.split("\n")) {
      const m = /^([a-z][\w-]*) = (.*)$/.exec(line);
      if (m) out[m[1]] = m[2];
    }
  }
  return out;
}

/** A glossary's `preferred` and `rejected` terms (the subset of YAML its files use). */
async function glossary(lang) {
  const text = await readFile(path.join(REPO, "locales", "glossary", `${lang}.yaml`), "utf8").catch(() => "");
  const preferred = [];
  const rejected = [];
  for (const line of text.split("\n")) {
    let m = /^\s+preferred: (.+)$/.exec(line);
    if (m) preferred.push(m[1].trim());
    m = /^\s+rejected: \[(.*)\]$/.exec(line);
    if (m) rejected.push(...m[1].split(",").map((t) => t.trim()).filter(Boolean));
  }
  return { preferred, rejected };
}

/** The rejected terms found in `text`, as the glossary check finds them (whole words for Latin). */
function rejectedIn(text, { preferred, rejected }) {
  const lower = text.toLowerCase();
  const found = [];
  for (const term of rejected) {
    const t = term.toLowerCase();
    // A variant inside a preferred term is that term ("微批" in "微批次"); one around it is not.
    let hay = lower;
    for (const p of preferred) {
      const pl = p.toLowerCase();
      if (pl.includes(t) && pl !== t) hay = hay.split(pl).join(" ".repeat(pl.length));
    }
    const latin = /[a-z]/.test(t);
    const escaped = t.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
    const re = latin ? new RegExp(`(?<![\\p{L}\\p{N}_-])${escaped}(?![\\p{L}\\p{N}_-])`, "u") : new RegExp(escaped, "u");
    if (re.test(hay)) found.push(term);
  }
  return found;
}

const { check, finish } = tally({ verbose: false });

async function guides(site, lang) {
  const entries = await readdir(path.join(site, lang), { withFileTypes: true });
  const folders = entries.filter((e) => e.isDirectory()).map((e) => e.name).sort();
  const has = await Promise.all(folders.map((f) => stat(path.join(site, lang, f, "index.html")).then(() => true, () => false)));
  return folders.filter((_, i) => has[i]);
}

/** What the page shows of tables, charts and prose, read in the page. */
function readPage(verdictLabel) {
  const shown = (el) => {
    if (!el) return false;
    const r = el.getBoundingClientRect();
    return r.width > 0 && r.height > 0 && el.checkVisibility({ visibilityProperty: true, opacityProperty: true });
  };
  const text = (el) => (el.textContent || "").replace(/\s+/g, " ").trim();
  const tables = [...document.querySelectorAll("main table, article table, table")].map((t) => {
    const heads = [...t.querySelectorAll("thead th")].map(text);
    const rows = [...t.querySelectorAll("tbody tr")].map((tr) => [...tr.children].map((td) => ({
      text: text(td), label: td.getAttribute("data-label") || "", shown: shown(td),
    })));
    return { heads, rows };
  });
  const options = tables.filter((t) => t.heads.length >= 5 && t.heads[t.heads.length - 1] === verdictLabel);
  const breakdown = tables.filter((t) => t.rows.some((r) => r[0] && r[0].text === verdictLabel));
  const charts = [...document.querySelectorAll("img")].filter((i) => /sweep-[\w-]+\.svg$/.test(i.getAttribute("src") || "")).map((img) => {
    const block = img.closest("p");
    const next = block && block.nextElementSibling;
    return { src: img.getAttribute("src"), alt: img.alt, caption: next ? text(next) : "", captionShown: shown(next) };
  });
  // A generate guide's charts: memory against context length, with the longest fit marked.
  const contextCharts = [...document.querySelectorAll("img")].filter((i) => /(^|\/)context(-[\w-]+)?\.svg$/.test(i.getAttribute("src") || "")).map((img) => {
    const block = img.closest("p");
    const next = block && block.nextElementSibling;
    return { src: img.getAttribute("src"), caption: next ? text(next) : "", captionShown: shown(next) };
  });
  const root = document.querySelector("main") || document.body;
  const clone = root.cloneNode(true);
  clone.querySelectorAll("pre, code, script, style, .search-results").forEach((e) => e.remove());
  const prose = (clone.textContent || "").replace(/\s+/g, " ");
  // The paragraph holding the rule, and whether it is rendered.
  const ruleBlocks = [...document.querySelectorAll("p")].map((p) => ({ text: text(p), shown: shown(p) }));
  return { options, breakdown, charts, contextCharts, prose, ruleBlocks };
}

async function main() {
  const args = parseArgs(process.argv);
  const site = path.resolve(args.site);
  const server = await serve(site);
  const origin = `http://127.0.0.1:${server.address().port}`;
  const browser = await launchChromium(args.chromium);
  try {
    for (const lang of LANGS) {
      const msg = await messages(lang);
      const gloss = await glossary(lang);
      const verdictLabel = msg["verdict-label"];
      const rule = msg["verdict-rule"];
      // The caption's rule: the sentence naming the marker, up to its placeholder.
      const captionRule = msg["chart-caption-sweep"].split("{")[0].trim().split(/[.。] ?/).pop();
      const block64 = msg["chart-caption-block-64"];
      // The context chart's rule: the sentence naming the vertical line, up to its value.
      const contextRule = msg["chart-caption-context"].split("{ $value }")[0].trim().split(/[.。] ?/).pop();
      check(Boolean(verdictLabel && rule && captionRule && block64), `${lang}: the locale has the verdict label, rule and captions`);
      for (const guide of await guides(site, lang)) {
        for (const scheme of SCHEMES) {
          const context = await browser.newContext({ colorScheme: scheme, viewport: { width: 1280, height: 900 } });
          const page = await context.newPage();
          for (const width of WIDTHS) {
            await page.setViewportSize({ width, height: 900 });
            await page.goto(`${origin}/${lang}/${guide}/`, { waitUntil: "load" });
            const where = `/${lang}/${guide}/ at ${width} px (${scheme})`;
            const seen = await page.evaluate(readPage, verdictLabel);
            const ruleShown = seen.ruleBlocks.some((p) => p.shown && p.text.includes(rule.replace(/\s+/g, " ")));
            check(ruleShown, `${where}: the verdicts' rule is shown`);
            if (seen.contextCharts.length > 0) {
              // A generate guide (phase: generate): the solvers' table and context charts instead
              // of a training step's options, breakdown and sweeps.
              for (const c of seen.contextCharts) {
                check(c.captionShown && c.caption.includes(contextRule),
                  `${where}: ${c.src}'s caption states the marker's rule`, c.caption);
              }
            } else {
              check(seen.options.length >= 1, `${where}: an options table with a "${verdictLabel}" column`);
              for (const t of seen.options) {
                const cells = t.rows.map((r) => r[r.length - 1]);
                check(cells.every((c) => c.label === verdictLabel && c.shown && c.text.length > 0),
                  `${where}: every verdict cell is labelled "${verdictLabel}" and rendered`,
                  JSON.stringify(cells.filter((c) => !(c.label === verdictLabel && c.shown))));
                const glued = t.rows.map((r) => r[0].text).filter((l) => l.includes(" / "));
                check(glued.length === 0, `${where}: one label per option row`, glued.join(" | "));
              }
              check(seen.breakdown.length >= 1, `${where}: the breakdown has a "${verdictLabel}" row`);
              for (const t of seen.breakdown) {
                const row = t.rows.find((r) => r[0].text === verdictLabel);
                check(row.length >= 2 && row[1].text.length > 0 && row[1].shown && (row.length < 3 || row[2].text === ""),
                  `${where}: the verdict row gives the verdict, never in the share column`, JSON.stringify(row));
              }
              check(seen.charts.length >= 1, `${where}: sweep charts`);
              for (const c of seen.charts) {
                check(c.captionShown && c.caption.includes(captionRule) || !/\d/.test(c.alt),
                  `${where}: ${c.src}'s caption states the marker's rule`, c.caption);
                if (c.src.includes("block-size")) {
                  check(c.caption.includes(block64), `${where}: ${c.src}'s caption says multiples of 64`, c.caption);
                }
              }
            }
            const bad = rejectedIn(seen.prose, gloss);
            check(bad.length === 0, `${where}: no word the ${lang} glossary rejects`, bad.join(", "));
            if (lang === "zh") {
              const grouped = seen.prose.match(/\d,\d{3}/g) || [];
              const spaced = seen.prose.match(/[\d万亿] (个|条|层|参数)/g) || [];
              check(grouped.length === 0 && spaced.length === 0, `${where}: Chinese numbers`, [...grouped, ...spaced].join(" "));
            }
            if (lang === "es") {
              check(!seen.prose.includes("mil M"), `${where}: Spanish counts in millions`);
            }
          }
          await context.close();
        }
      }
    }
  } finally {
    await browser.close();
    server.close();
  }
  finish();
}

main().catch((e) => { console.error(`error: ${e.stack || e}`); process.exit(2); });
