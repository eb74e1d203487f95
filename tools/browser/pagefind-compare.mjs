// Compares Pagefind with vramdoc's own search index on a built site (evidence for the README's
// "Why not Pagefind"): per query, the guides whose rendered <main> text holds the query (relevant),
// what each engine lists served over HTTP, and whether Pagefind loads from file://.
//
// Usage (Pagefind is not a dependency; npx fetches it):
//   cargo run -- build --out /tmp/site
//   npx -y pagefind@1.6.0 --site /tmp/site --glob '*/*/index.html' --root-selector main
//   node tools/browser/pagefind-compare.mjs /tmp/site
import { chromium } from "playwright-core";
import { createServer } from "node:http";
import { readFile, readdir, stat } from "node:fs/promises";
import path from "node:path";
import { pathToFileURL } from "node:url";
const root = process.argv[2];
const TYPES = { ".html": "text/html; charset=utf-8", ".js": "text/javascript", ".css": "text/css", ".json": "application/json", ".wasm": "application/wasm" };
const server = createServer(async (req, res) => {
  let file = path.join(root, decodeURIComponent(new URL(req.url, "http://x").pathname));
  try { if ((await stat(file)).isDirectory()) file = path.join(file, "index.html"); res.writeHead(200, { "content-type": TYPES[path.extname(file)] || "application/octet-stream" }).end(await readFile(file)); }
  catch { res.writeHead(404).end(); }
});
await new Promise((r) => server.listen(0, "127.0.0.1", r));
const origin = `http://127.0.0.1:${server.address().port}`;
const b = await chromium.launch({ executablePath: process.env.CHROMIUM || "/usr/bin/chromium", args: ["--no-sandbox", "--disable-gpu"] });
const p = await b.newPage();
const fold = (s) => s.normalize("NFD").replace(/\p{M}/gu, "").toLowerCase();
const Q = { zh: ["显存", "梯度累积", "批次", "logits", "累积", "显存不足", "不足", "存"], es: ["memoria", "acumulación", "logits"], en: ["out of memory", "logits", "gradient accumulation"] };
const slug = (u) => (u.match(/(?:^|\/)(?:en|es|zh)\/([^/#]+)/) || u.match(/^([^/#]+)\//) || [0, u])[1];
for (const lang of ["en", "es", "zh"]) {
  // Ground truth: guides whose rendered <main> text (folded) contains the query, and those whose written text does.
  const truth = {};
  const folders = (await readdir(path.join(root, lang), { withFileTypes: true })).filter((e) => e.isDirectory()).map((e) => e.name).sort();
  const guides = [];
  for (const f of folders) if (await stat(path.join(root, lang, f, "index.html")).then(() => true, () => false)) guides.push(f);
  for (const g of guides) {
    await p.goto(`${origin}/${lang}/${g}/`);
    truth[g] = fold(await p.evaluate(() => document.querySelector("main").innerText));
  }
  await p.goto(`${origin}/${lang}/`);
  for (const q of Q[lang]) {
    const rel = guides.filter((g) => truth[g].includes(fold(q)));
    const pf = await p.evaluate(async (q) => {
      const pf = await import("/pagefind/pagefind.js");
      const r = await pf.search(q);
      const data = await Promise.all(r.results.map((x) => x.data()));
      return data.map((d) => d.url + (d.sub_results?.[0]?.url?.includes("#") ? " #" + decodeURIComponent(d.sub_results[0].url.split("#")[1]) : ""));
    }, q);
    await p.fill("#site-search-q", q);
    await p.waitForFunction(() => { const t = document.querySelector(".search-status").textContent; return t && !t.endsWith("…"); });
    const own = await p.evaluate(() => [...document.querySelectorAll(".search-results li a")].map((a) => a.getAttribute("href")));
    const score = (list) => { const got = list.map(slug); const hit = got.filter((g) => rel.includes(g)).length; return `${hit}/${rel.length} relevant found, ${got.length - hit} not relevant`; };
    console.log(`${lang} "${q}": exact phrase in ${rel.length} guides [${rel.join(", ")}]`);
    console.log(`   pagefind: ${score(pf)}  order: ${pf.map((u) => slug(u.split(" ")[0]) + (u.includes(" #") ? u.slice(u.indexOf(" #")) : "")).join(", ")}`);
    console.log(`   vramdoc:  ${score(own.map((h) => h.split("#")[0]))}  order: ${own.map((h) => slug(h.split("#")[0]) + (h.includes("#") ? " #" + decodeURIComponent(h.split("#")[1]) : "")).join(", ")}`);
  }
}
// pagefind from file://
await p.goto(pathToFileURL(path.join(root, "zh", "index.html")).href);
const fileResult = await p.evaluate(async () => { try { const pf = await import("../pagefind/pagefind.js"); const r = await pf.search("显存"); return `ok ${r.results.length}`; } catch (e) { return "error: " + e; } });
console.log("pagefind from file://:", fileResult);
await b.close(); server.close();
