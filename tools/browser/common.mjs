/**
 * What the browser checks share (check.mjs, words.mjs, layout.mjs, translations.mjs): a static
 * server for a built site, the pass/fail tally, axe-core, and Chromium launched as this machine
 * needs it (no sandbox as root, no background networking: the network is closed).
 */
import { chromium } from "playwright-core";
import { createServer } from "node:http";
import { readFile, stat } from "node:fs/promises";
import { createRequire } from "node:module";
import path from "node:path";

const require = createRequire(import.meta.url);
const AXE_SOURCE = await readFile(require.resolve("axe-core/axe.min.js"), "utf8");

export const TYPES = {
  ".html": "text/html; charset=utf-8", ".css": "text/css", ".js": "text/javascript",
  ".svg": "image/svg+xml", ".xml": "application/xml", ".md": "text/markdown; charset=utf-8",
};

/** The path under which the site is also served, as from a base URL with a path. */
export const SUBPATH = "/sub";

/**
 * A static server for the site folder at the root and under SUBPATH; folders answer with their
 * index.html, misses with their language's 404.html (else the root one).
 */
export function serve(root) {
  const server = createServer(async (req, res) => {
    let urlPath = decodeURIComponent(new URL(req.url, "http://x").pathname);
    if (urlPath.startsWith(SUBPATH + "/")) urlPath = urlPath.slice(SUBPATH.length);
    let file = path.join(root, urlPath);
    if (!file.startsWith(root)) { res.writeHead(403).end(); return; }
    try {
      if ((await stat(file)).isDirectory()) file = path.join(file, "index.html");
      const body = await readFile(file);
      res.writeHead(200, { "content-type": TYPES[path.extname(file)] || "application/octet-stream" }).end(body);
    } catch {
      const lang = urlPath.split("/")[1];
      const page = await readFile(path.join(root, lang, "404.html"))
        .catch(() => readFile(path.join(root, "404.html")))
        .catch(() => "");
      res.writeHead(404, { "content-type": TYPES[".html"] }).end(page);
    }
  });
  return new Promise((resolve) => server.listen(0, "127.0.0.1", () => resolve(server)));
}

/**
 * The checks' tally: `check(ok, what, detail)` counts and prints (passes only when `verbose`),
 * `finish()` prints the totals and exits non-zero on any failure.
 */
export function tally({ verbose = true } = {}) {
  let passed = 0;
  let failed = 0;
  return {
    check(ok, what, detail = "") {
      if (ok) {
        passed++;
        if (verbose) console.log(`ok   ${what}`);
      } else {
        failed++;
        console.log(`FAIL ${what}${detail ? `: ${detail}` : ""}`);
      }
      return ok;
    },
    finish() {
      console.log(`${passed} passed, ${failed} failed`);
      process.exit(failed ? 1 : 0);
    },
  };
}

/** Serious and critical axe-core violations on the loaded page. */
export async function axeViolations(page) {
  await page.addScriptTag({ content: AXE_SOURCE });
  const result = await page.evaluate(async () => {
    // eslint-disable-next-line no-undef
    const r = await axe.run(document, { resultTypes: ["violations"] });
    return r.violations.map((v) => ({ id: v.id, impact: v.impact, nodes: v.nodes.slice(0, 3).map((n) => n.target.join(" ")) }));
  });
  return result.filter((v) => v.impact === "serious" || v.impact === "critical");
}

/** Headless Chromium at `executablePath`, with the flags this closed network needs. */
export function launchChromium(executablePath) {
  return chromium.launch({
    executablePath,
    args: ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
      "--disable-component-update", "--disable-sync", "--disable-dev-shm-usage"],
  });
}
