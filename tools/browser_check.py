#!/usr/bin/env python3
"""Headless-Chromium check of a built vramdoc site (stdlib only).

Serves the site directory on 127.0.0.1 (an ephemeral port, in this process) and,
through Chromium, loads the language chooser, each language's index and one guide
in each language. Checks: every same-origin href/src on those pages answers 200
(images as SVG, #fragments name an element), the charts decode in Chromium, the
language switcher leads to the translation, the Chinese page carries CJK text, a
CJK font is installed and draws real glyphs, and a screenshot of the Chinese guide
is not blank. Prints one line per check and a final "N passed, M failed" line;
exits 1 when any check failed, 2 when it could not run at all.

Usage: browser_check.py --site DIR [--guide SLUG] [--public-base URL] [--keep DIR]
"""

import argparse
import functools
import http.server
import os
import shutil
import signal
import struct
import subprocess
import sys
import tempfile
import threading
import urllib.error
import urllib.parse
import urllib.request
import zlib
from html.parser import HTMLParser

LANGS = ("en", "es", "zh")
CHROMIUM_FLAGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
    "--disable-dev-shm-usage", "--hide-scrollbars",
]
CHROMIUM_TIMEOUT_S = 60
HTTP_TIMEOUT_S = 10
PROBE_PREFIX = "/__browser_check__/"


class Page(HTMLParser):
    """What the checks need from one HTML document."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.lang = None
        self.refs = []  # (tag, attribute, value)
        self.ids = set()
        self.switcher = {}  # hreflang -> href inside <nav class="lang-switch">
        self.h1 = ""
        self.probes = {}  # data-probe -> data-ok, written by the probe pages' onload
        self.text = []
        self._nav_depth = 0
        self._in_h1 = False

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "html":
            self.lang = a.get("lang")
        for key in ("id", "name") if tag == "a" else ("id",):
            if a.get(key):
                self.ids.add(a[key])
        for attr in ("href", "src"):
            if tag in ("a", "link", "img") and a.get(attr) is not None:
                self.refs.append((tag, attr, a[attr]))
        if tag == "nav":
            if self._nav_depth or "lang-switch" in (a.get("class") or "").split():
                self._nav_depth += 1
        if tag == "a" and self._nav_depth and a.get("hreflang") and a.get("href"):
            self.switcher[a["hreflang"]] = a["href"]
        if tag == "h1":
            self._in_h1 = True
        if a.get("data-probe"):
            self.probes[a["data-probe"]] = a.get("data-ok")

    def handle_endtag(self, tag):
        if tag == "nav" and self._nav_depth:
            self._nav_depth -= 1
        if tag == "h1":
            self._in_h1 = False

    def handle_data(self, data):
        self.text.append(data)
        if self._in_h1:
            self.h1 += data


def parse(html):
    """Parse an HTML string into a Page."""
    page = Page()
    page.feed(html)
    page.close()
    page.h1 = " ".join(page.h1.split())
    return page


class Handler(http.server.SimpleHTTPRequestHandler):
    """Serves the site directory plus in-memory probe pages under PROBE_PREFIX."""

    probes = {}

    def do_GET(self):
        body = self.probes.get(self.path)
        if body is None:
            return super().do_GET()
        data = body.encode("utf-8")
        self.send_response(200)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args):
        pass


class Checker:
    """Runs Chromium against the local server and records pass/fail lines."""

    def __init__(self, chromium, origin, workdir):
        self.chromium = chromium
        self.origin = origin
        self.workdir = workdir
        self.passed = 0
        self.failed = 0
        self.cache = {}

    def check(self, ok, what, detail=""):
        """Record and print one check."""
        if ok:
            self.passed += 1
        else:
            self.failed += 1
        print(f"{'ok  ' if ok else 'FAIL'} {what}{'' if ok or not detail else ': ' + detail}", flush=True)
        return ok

    def chromium_run(self, args):
        """Run Chromium with a fresh profile; returns (rc, stdout). Kills its process group on timeout."""
        profile = tempfile.mkdtemp(prefix="profile-", dir=self.workdir)
        cmd = [self.chromium, *CHROMIUM_FLAGS, f"--user-data-dir={profile}", *args]
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
        try:
            out, err = proc.communicate(timeout=CHROMIUM_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            return None, f"Chromium took longer than {CHROMIUM_TIMEOUT_S} s"
        finally:
            if proc.poll() is None:  # timed out, or this script is being stopped: take its children too
                os.killpg(proc.pid, signal.SIGKILL)
                proc.communicate()
            shutil.rmtree(profile, ignore_errors=True)
        if proc.returncode != 0:
            tail = err.decode("utf-8", "replace").strip().splitlines()[-3:]
            return proc.returncode, f"Chromium exited {proc.returncode}: {' | '.join(tail)}"
        return 0, out.decode("utf-8", "replace")

    def dom(self, path):
        """The DOM Chromium renders for a path, or None (after recording a failure)."""
        rc, out = self.chromium_run(["--dump-dom", self.origin + path])
        if not self.check(rc == 0 and "<html" in out, f"{path} renders in Chromium", out[-300:]):
            return None
        return parse(out)

    def screenshot(self, url, name, size):
        """Screenshot a URL into workdir; returns the PNG path or None."""
        png = os.path.join(self.workdir, name)
        rc, out = self.chromium_run([f"--screenshot={png}", f"--window-size={size}", url])
        if rc != 0 or not os.path.exists(png):
            self.check(False, f"screenshot of {url}", out[-300:] if isinstance(out, str) else "")
            return None
        return png

    def fetch(self, url):
        """GET a URL; returns (status, content type, body) and caches the answer."""
        if url not in self.cache:
            try:
                with urllib.request.urlopen(url, timeout=HTTP_TIMEOUT_S) as resp:
                    self.cache[url] = (resp.status, resp.headers.get_content_type(), resp.read())
            except urllib.error.HTTPError as e:
                self.cache[url] = (e.code, "", b"")
            except (urllib.error.URLError, OSError) as e:
                self.cache[url] = (0, "", str(e).encode())
        return self.cache[url]


def check_refs(c, path, page, public_base):
    """Every href/src on the page resolves; returns the SVG image URLs it uses."""
    page_url = c.origin + path
    images, skipped = [], 0
    for tag, attr, value in dict.fromkeys(page.refs):
        url = urllib.parse.urljoin(page_url, value.strip())
        if public_base and url.startswith(public_base):
            url = c.origin + "/" + url[len(public_base):]
        parts = urllib.parse.urlsplit(url)
        if parts.scheme not in ("http", "https") or f"{parts.scheme}://{parts.netloc}" != c.origin:
            skipped += 1
            continue
        what = f"{path}: <{tag} {attr}={value!r}>"
        status, ctype, body = c.fetch(urllib.parse.urlunsplit(parts._replace(fragment="")))
        if status != 200:
            c.check(False, what, f"HTTP {status} for {parts.path}")
            continue
        if tag == "img":
            svg = body.lstrip().startswith((b"<svg", b"<?xml"))
            if c.check(ctype == "image/svg+xml" and svg, what, f"served as {ctype!r}, not an SVG document"):
                images.append(url)
            continue
        if parts.fragment:
            target = page if parts.path == urllib.parse.urlsplit(page_url).path else parse(body.decode("utf-8", "replace"))
            fragment = urllib.parse.unquote(parts.fragment)
            c.check(fragment in target.ids, what, f"no element with id {fragment!r}")
            continue
        c.check(True, what)
    if skipped:
        print(f"     ({path}: {skipped} external or non-HTTP references not fetched)")
    return images


def check_switcher(c, path, page, lang, kind):
    """The language switcher links to each other language's version of this page."""
    for other in LANGS:
        if other == lang:
            continue
        href = page.switcher.get(other)
        if not c.check(href is not None, f"{path}: switcher links to {other}", "no <a hreflang> in nav.lang-switch"):
            continue
        url = urllib.parse.urljoin(c.origin + path, href)
        want = f"/{other}/" + path[len(lang) + 2:]
        got = urllib.parse.urlsplit(url).path
        # Links name index.html so the output also works from disk (file://).
        if got.endswith("/index.html"):
            got = got[: -len("index.html")]
        c.check(got == want, f"{path}: switcher {other} -> {href} is the same page in {other}", f"leads to {got}, expected {want}")
        status, _, body = c.fetch(url)
        target = parse(body.decode("utf-8", "replace")) if status == 200 else Page()
        c.check(status == 200 and target.lang == other, f"{path}: switcher {other} -> {href} is <html lang={other}>",
                f"HTTP {status}, lang={target.lang!r}")
        if kind == "guide":
            c.check(bool(target.h1) and target.h1 != page.h1, f"{path}: {other} translation has its own <h1>",
                    f"h1 {target.h1!r} vs {page.h1!r}")


def check_charts_decode(c, images):
    """Chromium decodes every chart: a same-origin probe page records each <img>'s naturalWidth."""
    if not images:
        return
    tags = "".join(
        f'<img data-probe="{i}" src="{u}" onload="this.dataset.ok=this.naturalWidth" onerror="this.dataset.ok=-1">'
        for i, u in enumerate(images))
    Handler.probes[PROBE_PREFIX + "charts.html"] = f"<!doctype html><html><body>{tags}</body></html>"
    page = c.dom(PROBE_PREFIX + "charts.html")
    for i, url in enumerate(images):
        ok = page is not None and (page.probes.get(str(i)) or "-1").isdigit() and int(page.probes[str(i)]) > 0
        c.check(ok, f"chart decodes in Chromium: {url[len(c.origin):]}", f"naturalWidth={page and page.probes.get(str(i))}")


def decode_png(path):
    """Decode an 8-bit, non-interlaced PNG; returns (width, height, channels, rows of bytes)."""
    with open(path, "rb") as f:
        data = f.read()
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        raise ValueError("not a PNG file")
    pos, idat, header = 8, [], None
    while pos + 8 <= len(data):
        length, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + length]
        pos += 12 + length
        if kind == b"IHDR":
            header = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            idat.append(body)
    if header is None:
        raise ValueError("PNG has no IHDR chunk")
    width, height, depth, color, _, _, interlace = header
    channels = {0: 1, 2: 3, 4: 2, 6: 4}.get(color)
    if depth != 8 or interlace or channels is None:
        raise ValueError(f"unsupported PNG (depth {depth}, colour type {color}, interlace {interlace})")
    raw, bpp = zlib.decompress(b"".join(idat)), channels
    stride, rows, prev = width * bpp, [], bytearray(width * bpp)
    for y in range(height):
        i = y * (stride + 1)
        f, line = raw[i], bytearray(raw[i + 1:i + 1 + stride])
        if f == 1:
            for x in range(bpp, stride):
                line[x] = (line[x] + line[x - bpp]) & 255
        elif f == 2:
            line = bytearray((a + b) & 255 for a, b in zip(line, prev))
        elif f == 3:
            for x in range(stride):
                line[x] = (line[x] + (((line[x - bpp] if x >= bpp else 0) + prev[x]) >> 1)) & 255
        elif f == 4:
            for x in range(stride):
                a = line[x - bpp] if x >= bpp else 0
                b, cc = prev[x], (prev[x - bpp] if x >= bpp else 0)
                p = a + b - cc
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - cc)
                line[x] = (line[x] + (a if pa <= pb and pa <= pc else b if pb <= pc else cc)) & 255
        rows.append(line)
        prev = line
    return width, height, channels, rows


def ink(rows, channels, x0, x1):
    """Set of (row, column) pixels in columns [x0, x1) darker than near-white, and the distinct colours."""
    dark, colours = set(), set()
    for y, line in enumerate(rows):
        for x in range(x0, x1):
            px = bytes(line[x * channels:x * channels + min(channels, 3)])
            colours.add(px)
            if min(px) < 200:
                dark.add((y, x - x0))
    return dark, colours


def check_cjk(c, zh_guide_path, zh_page):
    """A CJK font is installed, draws distinct glyphs, and the Chinese guide screenshot is not blank."""
    fonts = subprocess.run(["fc-list", ":lang=zh", "family"], capture_output=True, text=True, timeout=30).stdout
    c.check(bool(fonts.strip()), "fc-list :lang=zh lists a CJK font", "install fonts-noto-cjk")
    if zh_page is not None:
        han = sum(1 for ch in "".join(zh_page.text) if "\u4e00" <= ch <= "\u9fff")
        c.check(han >= 50, f"{zh_guide_path}: DOM has Chinese text ({han} Han characters)", "expected at least 50")
    # Two different characters, side by side: real glyphs differ, missing-glyph boxes are identical.
    Handler.probes[PROBE_PREFIX + "glyphs.html"] = (
        '<!doctype html><html lang="zh"><meta charset="utf-8"><style>html,body{margin:0;background:#fff}'
        "div{position:absolute;top:0;width:300px;height:300px;font:240px/300px sans-serif;color:#000;"
        'text-align:center}</style><div style="left:0">显</div><div style="left:300px">存</div></html>')
    png = c.screenshot(c.origin + PROBE_PREFIX + "glyphs.html", "glyphs.png", "600,300")
    if png:
        w, _, ch, rows = decode_png(png)
        left, _ = ink(rows, ch, 0, w // 2)
        right, _ = ink(rows, ch, w // 2, w)
        union = len(left | right) or 1
        differ = len(left ^ right) / union
        c.check(len(left) > 2000 and len(right) > 2000 and differ > 0.3,
                f"CJK glyphs draw ({len(left)} and {len(right)} dark pixels, {differ:.0%} differ)",
                "expected two distinct glyphs of over 2000 dark pixels each (missing glyphs draw identical boxes)")
    png = c.screenshot(c.origin + zh_guide_path, "zh-guide.png", "1000,1400")
    if png:
        w, h, ch, rows = decode_png(png)
        dark, colours = ink(rows, ch, 0, w)
        share = len(dark) / (w * h)
        c.check(share > 0.02 and len(colours) > 16,
                f"{zh_guide_path}: screenshot not blank ({share:.1%} dark pixels, {len(colours)} colours)",
                "expected over 2% dark pixels and over 16 colours")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--site", required=True, help="directory of the built site")
    ap.add_argument("--guide", help="guide slug to check in each language (default: first on /en/)")
    ap.add_argument("--public-base", help="site base_url; absolute links under it are checked locally")
    ap.add_argument("--keep", help="copy the screenshots into this directory")
    ap.add_argument("--chromium", default=os.environ.get("CHROMIUM", "chromium"))
    args = ap.parse_args()
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(124))  # `timeout` stops us: clean up Chromium first
    if not os.path.isfile(os.path.join(args.site, "en", "index.html")):
        sys.exit(f"error: {args.site} has no en/index.html; build the site first (vramdoc build --out DIR)")
    if shutil.which(args.chromium) is None:
        sys.exit(f"error: {args.chromium!r} not found; install Debian's chromium (or set CHROMIUM)")
    public_base = args.public_base.rstrip("/") + "/" if args.public_base else None

    server = http.server.ThreadingHTTPServer(
        ("127.0.0.1", 0), functools.partial(Handler, directory=os.path.abspath(args.site)))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    workdir = tempfile.mkdtemp(prefix="browser-check-")
    c = Checker(args.chromium, f"http://127.0.0.1:{server.server_address[1]}", workdir)
    print(f"serving {args.site} at {c.origin}")
    try:
        guide = args.guide
        pages = [("/", None, "chooser")] + [(f"/{lang}/", lang, "index") for lang in LANGS]
        images, zh_page = [], None
        for path, lang, kind in pages + [(None, lang, "guide") for lang in LANGS]:
            if kind == "guide":
                if guide is None:
                    c.check(False, "pick a guide", "/en/ links to no guide; pass --guide")
                    break
                path = f"/{lang}/{guide}/"
            page = c.dom(path)
            if page is None:
                continue
            if lang:
                c.check(page.lang == lang, f"{path}: <html lang={lang}>", f"found {page.lang!r}")
            images += check_refs(c, path, page, public_base)
            if lang:
                check_switcher(c, path, page, lang, kind)
            if path == "/en/" and guide is None:
                guide = next((v.split("/")[0] for t, _, v in page.refs if t == "a"
                              and v.endswith("/index.html") and v.count("/") == 1
                              and not v.startswith((".", "/", "#"))), None)
            if kind == "guide":
                c.check(sum(1 for t, _, _ in page.refs if t == "img") >= 3, f"{path}: has at least 3 charts")
                if lang == "zh":
                    zh_page = page
        check_charts_decode(c, sorted(set(images)))
        check_cjk(c, f"/zh/{guide}/", zh_page)
        if args.keep:
            os.makedirs(args.keep, exist_ok=True)
            for name in ("zh-guide.png", "glyphs.png"):
                if os.path.exists(os.path.join(workdir, name)):
                    shutil.copy(os.path.join(workdir, name), args.keep)
    finally:
        server.shutdown()
        shutil.rmtree(workdir, ignore_errors=True)
    print(f"{c.passed} passed, {c.failed} failed")
    return 1 if c.failed else 0


if __name__ == "__main__":
    sys.exit(main())
