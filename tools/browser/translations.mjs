// Translation notices and status pages in headless Chromium (Playwright + axe-core, as check.mjs).
//
// Copies the bundled site (vramdoc.yaml and content/) to a temporary folder and makes its first
// guide drift: a sentence added to the English page's second section (stale in es and zh) and
// the last section cut from the Chinese page (missing in zh). Builds it with the vramdoc binary,
// serves it on 127.0.0.1 and checks, in Spanish and Chinese, light and dark:
//   - the guide shows the stale notice under the changed section's heading, in the page's
//     language, and its link leads to the same section of the English page;
//   - the Chinese guide shows the missing section in English, under its own notice;
//   - the language index links to the translation-status page, which lists the stale section
//     (and in Chinese the missing one) with its state;
//   - none of these pages has a serious or critical axe-core violation.
// Screenshots of the notices and status pages go to --shots.
//
// Usage: node translations.mjs [--root DIR] [--vramdoc PATH] [--shots DIR] [--chromium PATH]
// Prints one line per check and "N passed, M failed"; exits 1 on any failure, 2 if it cannot run.

import { axeViolations, launchChromium, serve, SUBPATH, tally, TYPES } from "./common.mjs";
import { createServer } from "node:http";
import { execFileSync } from "node:child_process";
import { cp, mkdtemp, mkdir, readFile, readdir, rm, stat, writeFile } from "node:fs/promises";
import { createRequire } from "node:module";
import os from "node:os";
import path from "node:path";

const DESKTOP = { width: 1280, height: 900 };

function parseArgs(argv) {
  const args = {
    root: process.cwd(), vramdoc: "target/debug/vramdoc", shots: null,
    chromium: process.env.CHROMIUM || "/usr/bin/chromium",
  };
  for (let i = 2; i < argv.length; i += 2) {
    const key = argv[i].replace(/^--/, "");
    if (!(key in args)) throw new Error(`unknown option ${argv[i]}`);
    args[key] = argv[i + 1];
  }
  return args;
}

const { check, finish } = tally({ verbose: true });

/** The slug a heading line gets when it has no `{#id}`: as the renderer's slugify does. */
function slugify(text) {
  return text.toLowerCase().replace(/[^\p{L}\p{N}_\u0300-\u036f]+/gu, "-").replace(/^-+|-+$/g, "");
}

/** `## Heading {#id}` lines of a page (outside code fences), with their line index and id. */
function headings(lines) {
  const out = [];
  let fence = false;
  lines.forEach((line, i) => {
    if (line.startsWith("```")) fence = !fence;
    const m = !fence && line.match(/^#{2,3} (.*?)(?: \{#([^}]+)\})?\s*$/);
    if (m) out.push({ i, id: m[2] || slugify(m[1]) });
  });
  return out;
}

/** Copies the bundled site and makes its first guide drift; returns what drifted. */
async function driftedSite(root, dir) {
  await cp(path.join(root, "vramdoc.yaml"), path.join(dir, "vramdoc.yaml"));
  await cp(path.join(root, "content"), path.join(dir, "content"), { recursive: true });
  const slug = (await readdir(path.join(dir, "content"))).sort()[0];
  const page = (lang) => path.join(dir, "content", slug, `${lang}.md`);
  const en = (await readFile(page("en"), "utf8")).split("\n");
  const enHeads = headings(en);
  const stale = enHeads[1];
  en.splice(stale.i + 1, 0, "", "A sentence added to the English page since it was translated.");
  await writeFile(page("en"), en.join("\n"));
  const zh = (await readFile(page("zh"), "utf8")).split("\n");
  const last = headings(zh).slice(-1)[0];
  await writeFile(page("zh"), zh.slice(0, last.i).join("\n") + "\n");
  return { slug, stale: stale.id, missing: last.id };
}

async function main() {
  const args = parseArgs(process.argv);
  const tmp = await mkdtemp(path.join(os.tmpdir(), "vramdoc-translations-"));
  const src = path.join(tmp, "src");
  const out = path.join(tmp, "out");
  await mkdir(src);
  const drift = await driftedSite(path.resolve(args.root), src);
  execFileSync(path.resolve(args.vramdoc), ["build", "--root", src, "--out", out, "--quiet"], { stdio: "inherit" });
  const server = await serve(out);
  const origin = `http://127.0.0.1:${server.address().port}`;
  const browser = await launchChromium(args.chromium);
  const { slug, stale, missing } = drift;
  try {
    for (const scheme of ["light", "dark"]) {
      const context = await browser.newContext({ viewport: DESKTOP, colorScheme: scheme });
      const page = await context.newPage();
      for (const lang of ["es", "zh"]) {
        const where = `/${lang}/${slug}/ (${scheme})`;
        await page.goto(`${origin}/${lang}/${slug}/`, { waitUntil: "load" });
        const notice = await page.evaluate((id) => {
          const n = document.querySelector('blockquote.translation-notice[data-state="stale"]');
          if (!n) return null;
          let h = n.previousElementSibling;
          const box = n.getBoundingClientRect();
          return { heading: h && h.id, text: n.innerText.trim(), href: n.querySelector("a")?.getAttribute("href"),
            visible: box.width > 0 && box.height > 0, role: n.getAttribute("role"), want: id };
        }, stale);
        if (check(notice !== null, `${where}: a stale-section notice`)) {
          check(notice.heading === stale && notice.visible && notice.role === "note",
            `${where}: the notice sits under the heading of section ${stale}, visible, as a note`, JSON.stringify(notice));
          const words = lang === "zh" ? /原文/ : /original/;
          check(words.test(notice.text), `${where}: the notice speaks the page's language`, notice.text);
          await page.click('blockquote.translation-notice[data-state="stale"] a');
          await page.waitForLoadState("load");
          const landed = await page.evaluate(() => ({ path: location.pathname, hash: location.hash,
            target: !!document.getElementById(decodeURIComponent(location.hash.slice(1))), lang: document.documentElement.lang }));
          check(landed.path === `/en/${slug}/index.html` && landed.hash === `#${stale}` && landed.target && landed.lang === "en",
            `${where}: the notice's link leads to the English section`, JSON.stringify(landed));
          await page.goto(`${origin}/${lang}/${slug}/`, { waitUntil: "load" });
        }
        if (lang === "zh") {
          const shown = await page.evaluate((id) => {
            const n = document.querySelector('blockquote.translation-notice[data-state="missing"]');
            const h = n && n.previousElementSibling;
            const next = n && n.nextElementSibling;
            return n && { heading: h && h.id, text: n.innerText, after: next ? next.innerText : "" };
          }, missing);
          check(shown && shown.heading === missing && /尚未翻译/.test(shown.text) && /[A-Za-z]{3,}/.test(shown.after),
            `${where}: the missing section ${missing} is shown in English under its notice`, JSON.stringify(shown));
        }
        const violations = await axeViolations(page);
        check(violations.length === 0, `${where}: no serious or critical axe-core violations`,
          violations.map((v) => `${v.id} (${v.impact}) at ${v.nodes.join(", ")}`).join("; "));
        if (args.shots) {
          await mkdir(args.shots, { recursive: true });
          await page.locator("blockquote.translation-notice").first().scrollIntoViewIfNeeded();
          await page.screenshot({ path: path.join(args.shots, `notice-${lang}-${scheme}.png`) });
        }

        // The status page, reached from the language index.
        const status = `/${lang}/translation-status.html (${scheme})`;
        await page.goto(`${origin}/${lang}/`, { waitUntil: "load" });
        const link = page.locator('a[href="translation-status.html"]');
        if (check(await link.count() === 1, `/${lang}/ (${scheme}): links to the translation-status page`)) {
          await link.click();
          await page.waitForLoadState("load");
        } else {
          await page.goto(`${origin}/${lang}/translation-status.html`, { waitUntil: "load" });
        }
        const states = await page.evaluate((g) => Object.fromEntries(
          [...document.querySelectorAll(`li[data-guide="${g}"] li[data-section]`)]
            .map((li) => [li.dataset.section, [li.dataset.state, li.querySelector(".state").innerText]])), slug);
        check(states[stale]?.[0] === "stale" && states[stale][1].length > 0,
          `${status}: lists section ${stale} as stale, in the page's language`, JSON.stringify(states[stale]));
        if (lang === "zh") {
          check(states[missing]?.[0] === "missing", `${status}: lists section ${missing} as missing`, JSON.stringify(states[missing]));
        }
        const current = Object.values(states).filter(([s]) => s === "current").length;
        check(current > 0 && current === Object.keys(states).length - (lang === "zh" ? 2 : 1),
          `${status}: the other sections are current`, JSON.stringify(states));
        const violationsStatus = await axeViolations(page);
        check(violationsStatus.length === 0, `${status}: no serious or critical axe-core violations`,
          violationsStatus.map((v) => `${v.id} (${v.impact}) at ${v.nodes.join(", ")}`).join("; "));
        if (args.shots) await page.screenshot({ path: path.join(args.shots, `status-${lang}-${scheme}.png`), fullPage: true });
      }
      await context.close();
    }
  } finally {
    await browser.close();
    server.close();
    await rm(tmp, { recursive: true, force: true });
  }
  finish();
}

main().catch((e) => { console.error(e); process.exit(2); });
