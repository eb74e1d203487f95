//! `vramdoc serve` end to end: the real binary on a fixture site, polled with plain HTTP/1.0.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::support::SiteTest;

/// How long any one thing may take to show up before the test fails.
const PATIENCE: Duration = Duration::from_secs(20);

/// The running `vramdoc serve`; killed when dropped, also when the test panics.
struct Served {
    child: Child,
    port: u16,
    log: PathBuf,
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Served {
    fn start(t: &SiteTest) -> Served {
        let port = free_port();
        let log = t.root().join("serve.log");
        let file = std::fs::File::create(&log).unwrap();
        let child = Command::new(env!("CARGO_BIN_EXE_vramdoc"))
            .args(["serve", "--root"])
            .arg(t.root())
            .args(["--port", &port.to_string()])
            .stdin(Stdio::null())
            .stdout(file.try_clone().unwrap())
            .stderr(file)
            .spawn()
            .expect("start vramdoc serve");
        Served { child, port, log }
    }

    fn get(&self, path: &str) -> Option<Reply> {
        request(
            self.port,
            &format!("GET {path} HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n"),
        )
    }

    /// Polls `f` until it yields a value; fails with the server's log after [`PATIENCE`].
    fn poll<T>(&self, what: &str, mut f: impl FnMut() -> Option<T>) -> T {
        let start = Instant::now();
        loop {
            if let Some(v) = f() {
                return v;
            }
            if start.elapsed() > PATIENCE {
                let log = std::fs::read_to_string(&self.log).unwrap_or_default();
                panic!("timed out waiting for {what}; server log:\n{log}");
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    fn status(&self) -> serde_json::Value {
        let r = self.get("/__vramdoc/status").expect("status answers");
        assert_eq!(r.code, 200);
        assert!(r.header("content-type").starts_with("application/json"));
        serde_json::from_str(&r.body).expect("status is JSON")
    }
}

/// A parsed HTTP response.
struct Reply {
    code: u16,
    head: String,
    body: String,
}

impl Reply {
    /// The value of a header (lower-case name), or "".
    fn header(&self, name: &str) -> String {
        self.head
            .lines()
            .filter_map(|l| l.split_once(':'))
            .find(|(n, _)| n.trim().eq_ignore_ascii_case(name))
            .map(|(_, v)| v.trim().to_owned())
            .unwrap_or_default()
    }
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// Sends a raw request; `None` while nothing listens yet.
fn request(port: u16, raw: &str) -> Option<Reply> {
    let mut s = TcpStream::connect(("127.0.0.1", port)).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(10))).ok()?;
    s.write_all(raw.as_bytes()).ok()?;
    let mut bytes = Vec::new();
    s.read_to_end(&mut bytes).ok()?;
    let text = String::from_utf8_lossy(&bytes).into_owned();
    let (head, body) = text.split_once("\r\n\r\n")?;
    let code = head.split(' ').nth(1)?.parse().ok()?;
    Some(Reply {
        code,
        head: head.to_owned(),
        body: body.to_owned(),
    })
}

/// The next `data:` payload of an event stream, as JSON.
fn next_event(stream: &mut BufReader<TcpStream>) -> serde_json::Value {
    let mut line = String::new();
    loop {
        line.clear();
        let n = stream.read_line(&mut line).expect("event stream readable");
        assert!(n > 0, "event stream closed");
        if let Some(data) = line.strip_prefix("data: ") {
            return serde_json::from_str(data.trim_end()).expect("event is JSON");
        }
    }
}

fn guide_site() -> SiteTest {
    let t = SiteTest::new();
    t.guide(
        "memory-basics",
        "en",
        "Where the memory goes",
        "Weights first.",
    );
    t.guide(
        "memory-basics",
        "es",
        "Adónde va la memoria",
        "Primero los pesos.",
    );
    t.guide("memory-basics", "zh", "显存都去哪儿了", "先说权重。");
    t
}

const PAGE: &str = "/en/memory-basics/";

#[test]
fn rebuilds_on_edit_reports_errors_and_recovers() {
    let t = guide_site();
    let s = Served::start(&t);
    let first = s.poll("the first page", || s.get(PAGE).filter(|r| r.code == 200));
    assert!(first.body.contains("<h1>Where the memory goes</h1>"));
    assert!(
        first
            .body
            .contains("<script src=\"/__vramdoc/reload.js\" data-version=\"1\"></script>\n</body>"),
        "reload script before </body>:\n{}",
        first.body
    );
    let on_disk = t.output("en/memory-basics/index.html");
    assert!(
        !on_disk.contains("__vramdoc"),
        "injection must not touch the file"
    );
    let status = s.status();
    assert_eq!(
        (status["version"].as_u64(), status["ok"].as_bool()),
        (Some(1), Some(true))
    );

    let mut events = TcpStream::connect(("127.0.0.1", s.port)).unwrap();
    events.set_read_timeout(Some(PATIENCE)).unwrap();
    events
        .write_all(b"GET /__vramdoc/events HTTP/1.0\r\n\r\n")
        .unwrap();
    let mut events = BufReader::new(events);
    assert_eq!(
        next_event(&mut events)["version"],
        1,
        "current status first"
    );

    t.guide("memory-basics", "en", "A retitled guide", "Weights first.");
    let page = s.poll("the new title", || {
        s.get(PAGE)
            .filter(|r| r.body.contains("<h1>A retitled guide</h1>"))
    });
    let pushed = next_event(&mut events);
    assert_eq!(pushed["ok"], true);
    let v = pushed["version"].as_u64().unwrap();
    assert!(v >= 2, "a rebuild is a new version: {pushed}");
    let latest = s.status()["version"].as_u64().unwrap();
    assert!(page.body.contains(&format!("data-version=\"{latest}\"")));

    t.file(
        "content/memory-basics/en.md",
        "title: \"no opening delimiter\"\nlang: en\n---\n\nBody.\n",
    );
    let broken = s.poll("a failed build", || {
        Some(s.status()).filter(|st| st["ok"] == false)
    });
    let errors = broken["errors"].as_array().unwrap();
    assert!(!errors.is_empty());
    let file = errors[0]["file"].as_str().unwrap().replace('\\', "/");
    assert_eq!(file, "content/memory-basics/en.md");
    assert!(errors[0]["text"].as_str().unwrap().contains("en.md"));
    let kept = s.get(PAGE).unwrap();
    assert_eq!(kept.code, 200, "the previous output is still served");
    assert!(kept.body.contains("<h1>A retitled guide</h1>"));
    let failed = loop {
        let e = next_event(&mut events);
        if e["ok"] == false {
            break e;
        }
    };
    assert_eq!(
        failed["errors"][0]["file"]
            .as_str()
            .map(|f| f.replace('\\', "/")),
        Some(file)
    );

    t.guide("memory-basics", "en", "Fixed again", "Weights first.");
    s.poll("recovery", || {
        let st = s.status();
        let page = s.get(PAGE)?;
        (st["ok"] == true && page.body.contains("<h1>Fixed again</h1>")).then_some(())
    });

    // Building reads the sources; that must not count as a change (no rebuild loop).
    let settled = s.status()["version"].as_u64().unwrap();
    std::thread::sleep(Duration::from_millis(1200));
    assert_eq!(s.status()["version"].as_u64().unwrap(), settled);
}

#[test]
fn serves_files_with_types_redirects_and_404_and_nothing_outside() {
    let t = guide_site();
    let s = Served::start(&t);
    s.poll("the root page", || s.get("/").filter(|r| r.code == 200));
    for (path, ty) in [
        ("/", "text/html; charset=utf-8"),
        (PAGE, "text/html; charset=utf-8"),
        ("/en/memory-basics/index.md", "text/markdown; charset=utf-8"),
        ("/style.css", "text/css; charset=utf-8"),
        ("/sitemap.xml", "application/xml; charset=utf-8"),
        ("/__vramdoc/reload.js", "text/javascript; charset=utf-8"),
    ] {
        let r = s.get(path).unwrap();
        assert_eq!(r.code, 200, "{path}");
        assert_eq!(r.header("content-type"), ty, "{path}");
    }
    let md = s.get("/en/memory-basics/index.md").unwrap();
    assert!(!md.body.contains("__vramdoc"), "only HTML gets the script");

    let r = s.get("/en/memory-basics").unwrap();
    assert_eq!(r.code, 301);
    assert_eq!(r.header("location"), PAGE);

    let r = s.get("/en/no-such-guide/").unwrap();
    assert_eq!(r.code, 404);
    assert!(r.header("content-type").starts_with("text/html"));
    assert!(
        r.body.contains("/__vramdoc/reload.js"),
        "404 pages reload too"
    );

    for path in [
        "/../vramdoc.yaml",
        "/%2e%2e/vramdoc.yaml",
        "/en/..%2f..%2fvramdoc.yaml",
        "/..%5cvramdoc.yaml",
        "/.vramdoc-build",
    ] {
        let r = s.get(path).unwrap();
        assert_eq!(r.code, 404, "{path}");
        assert!(
            !r.body.contains("default_language"),
            "{path} leaked the config"
        );
    }

    let post = request(s.port, "POST / HTTP/1.0\r\nContent-Length: 0\r\n\r\n").unwrap();
    assert_eq!(post.code, 405);
    let head = request(s.port, "HEAD /style.css HTTP/1.0\r\n\r\n").unwrap();
    assert_eq!(head.code, 200);
    assert!(head.body.is_empty(), "HEAD sends no body");
    let css_len = std::fs::metadata(t.root().join("public/style.css"))
        .unwrap()
        .len();
    assert_eq!(head.header("content-length"), css_len.to_string());
    let bad = request(s.port, "GET ../vramdoc.yaml HTTP/1.0\r\n\r\n").unwrap();
    assert_eq!(bad.code, 400);
}

#[test]
fn a_busy_port_is_an_error_that_says_what_to_do() {
    let t = guide_site();
    let busy = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = busy.local_addr().unwrap().port().to_string();
    let r = t.run(&["serve", "--port", &port]);
    assert_ne!(r.code, 0);
    assert!(
        r.stderr
            .contains(&format!("cannot listen on 127.0.0.1:{port}")),
        "{}",
        r.stderr
    );
    assert!(r.stderr.contains("--port"), "{}", r.stderr);
}

#[test]
fn a_folder_it_may_not_build_into_is_not_served_either() {
    let t = guide_site();
    t.file("mine/notes.html", "<p>my own notes</p>\n");
    let port = free_port();
    let mut child = Command::new(env!("CARGO_BIN_EXE_vramdoc"))
        .args(["serve", "--out", "mine", "--port", &port.to_string()])
        .current_dir(t.root())
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let start = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if start.elapsed() > PATIENCE {
            let served = request(port, "GET /notes.html HTTP/1.0\r\n\r\n").map(|r| r.code);
            let _ = child.kill();
            let _ = child.wait();
            panic!("serve kept running (GET /notes.html: {served:?})");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let mut stderr = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut stderr)
        .unwrap();
    assert!(!status.success());
    assert!(
        stderr.contains("mine: it was not written by vramdoc"),
        "{stderr}"
    );
    assert_eq!(
        std::fs::read_to_string(t.root().join("mine/notes.html")).unwrap(),
        "<p>my own notes</p>\n"
    );
}

#[test]
fn only_requests_for_the_loopback_names_are_answered() {
    let t = guide_site();
    let s = Served::start(&t);
    s.poll("the first page", || s.get(PAGE).filter(|r| r.code == 200));
    let port = s.port;
    let get = |host: &str| {
        request(
            port,
            &format!("GET {PAGE} HTTP/1.1\r\nHost: {host}\r\n\r\n"),
        )
        .unwrap()
        .code
    };
    for ok in [
        format!("127.0.0.1:{port}"),
        format!("localhost:{port}"),
        format!("[::1]:{port}"),
    ] {
        assert_eq!(get(&ok), 200, "{ok}");
    }
    // DNS rebinding: a page served from another name that now resolves to 127.0.0.1.
    for bad in [
        format!("evil.example:{port}"),
        format!("localhost.evil.example:{port}"),
        format!("127.0.0.1:{}", port.wrapping_add(1)),
    ] {
        assert_eq!(get(&bad), 403, "{bad}");
    }
    let events = request(
        port,
        "GET /__vramdoc/status HTTP/1.1\r\nHost: evil.example\r\n\r\n",
    )
    .unwrap();
    assert_eq!(events.code, 403, "the server's own endpoints too");
}

/// Sends raw bytes; the status code of the answer, `None` when the connection closed without one.
fn raw_status(port: u16, raw: &[u8]) -> Option<u16> {
    let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    s.write_all(raw).unwrap();
    let mut bytes = Vec::new();
    let _ = s.read_to_end(&mut bytes);
    String::from_utf8_lossy(&bytes)
        .split(' ')
        .nth(1)?
        .parse()
        .ok()
}

#[test]
fn requests_without_host_or_with_a_path_that_is_not_utf8_get_400() {
    let t = guide_site();
    let s = Served::start(&t);
    s.poll("the first page", || s.get(PAGE).filter(|r| r.code == 200));
    assert_eq!(raw_status(s.port, b"GET / HTTP/1.1\r\n\r\n"), Some(400));
    let host = "Host: 127.0.0.1\r\n\r\n";
    let not_utf8 = [
        b"GET /en/\xff\xfe/ HTTP/1.1\r\n".as_slice(),
        host.as_bytes(),
    ]
    .concat();
    assert_eq!(raw_status(s.port, &not_utf8), Some(400));
    let escaped = format!("GET /en/%FF%FE/ HTTP/1.1\r\n{host}");
    assert_eq!(raw_status(s.port, escaped.as_bytes()), Some(400));
    // HTTP/1.0 may leave Host out.
    assert_eq!(raw_status(s.port, b"GET /en/ HTTP/1.0\r\n\r\n"), Some(200));
}

#[test]
fn a_client_trickling_its_request_is_cut_off_at_the_deadline() {
    let t = guide_site();
    let s = Served::start(&t);
    s.poll("the first page", || s.get(PAGE).filter(|r| r.code == 200));
    let mut c = TcpStream::connect(("127.0.0.1", s.port)).unwrap();
    c.set_read_timeout(Some(Duration::from_millis(300)))
        .unwrap();
    c.write_all(b"GET / HTTP/1.1\r\nX-Slow: ").unwrap();
    let start = Instant::now();
    // One byte every 300 ms: each read is quick, the whole head never ends.
    let closed_after = loop {
        assert!(
            start.elapsed() < Duration::from_secs(25),
            "the connection is still open after 25 s"
        );
        if c.write_all(b"a").is_err() {
            break start.elapsed();
        }
        let mut buf = [0u8; 64];
        match c.read(&mut buf) {
            Ok(_) => break start.elapsed(),
            Err(e)
                if e.kind() == std::io::ErrorKind::WouldBlock
                    || e.kind() == std::io::ErrorKind::TimedOut => {}
            Err(_) => break start.elapsed(),
        }
    };
    assert!(closed_after >= Duration::from_secs(8), "{closed_after:?}");
    // Others are served meanwhile and after.
    assert_eq!(s.get(PAGE).map(|r| r.code), Some(200));
}

#[test]
fn outputs_deleted_by_hand_are_restored_when_a_request_misses_them() {
    let t = guide_site();
    let s = Served::start(&t);
    s.poll("the first page", || s.get(PAGE).filter(|r| r.code == 200));
    std::fs::remove_dir_all(t.root().join("public/en")).unwrap();
    assert_eq!(s.get(PAGE).map(|r| r.code), Some(404));
    let page = s.poll("the restored page", || {
        s.get(PAGE).filter(|r| r.code == 200)
    });
    assert!(page.body.contains("<h1>Where the memory goes</h1>"));
    assert!(t.root().join("public/en/index.html").is_file());
}
