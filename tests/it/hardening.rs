//! Hostile inputs and file-system edges (issue 11): a failed build leaves the output as it was
//! and says so truthfully, the configuration is validated whole, leftovers of killed builds are
//! cleaned, concurrent builds take turns, a symlinked `--out` is written through, and the build
//! reads only regular files of bounded size inside the site.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::support::{SiteTest, CONFIG};

/// Every file under `dir` with its bytes, sorted by path (relative to `dir`).
fn files(dir: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    fn walk(dir: &Path, rel: &Path, out: &mut Vec<(PathBuf, Vec<u8>)>) {
        for e in std::fs::read_dir(dir).unwrap().flatten() {
            let (p, r) = (e.path(), rel.join(e.file_name()));
            if e.file_type().unwrap().is_dir() {
                walk(&p, &r, out);
            } else {
                out.push((r, std::fs::read(&p).unwrap()));
            }
        }
    }
    let mut out = Vec::new();
    walk(dir, Path::new(""), &mut out);
    out.sort();
    out
}

/// The names of `dir`'s entries, sorted.
fn names(dir: &Path) -> Vec<String> {
    let mut n: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    n.sort();
    n
}

/// A site of two guides in English and Spanish.
fn two_guides() -> SiteTest {
    let t = SiteTest::new();
    for slug in ["alpha", "beta"] {
        t.guide(slug, "en", slug, "First version.");
        t.guide(slug, "es", slug, "Primera versión.");
    }
    t
}

/// Runs `vramdoc build` with a deadline, so a build that blocks fails the test instead of
/// hanging it.
fn build_within(t: &SiteTest, args: &[&str], limit: Duration) -> (i32, String) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_vramdoc"))
        .arg("build")
        .args(args)
        .current_dir(t.root())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let start = Instant::now();
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            let mut err = String::new();
            std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut err).unwrap();
            return (status.code().unwrap_or(-1), err);
        }
        if start.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            panic!("vramdoc build still running after {limit:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn a_language_listed_twice_fails_at_its_line_and_changes_nothing() {
    let t = two_guides();
    t.build_ok();
    let before = files(&t.root().join("public"));
    t.guide("alpha", "en", "alpha", "Second version.");
    t.file(
        "vramdoc.yaml",
        &CONFIG.replace("languages: [en, es, zh]", "languages: [en, es, zh, en]"),
    );
    let r = t.build_err();
    assert!(
        r.stderr.contains("`en` is listed twice in `languages`"),
        "{}",
        r.stderr
    );
    assert!(r.stderr.contains("vramdoc.yaml:6:25"), "{}", r.stderr);
    assert!(r.stderr.contains("was left unchanged"), "{}", r.stderr);
    assert_eq!(files(&t.root().join("public")), before);
}

#[test]
fn every_configuration_problem_is_reported_at_its_line() {
    let t = two_guides();
    t.file(
        "vramdoc.yaml",
        "title:\n  en: T\n  fr: T\nbase_url: https:///\nlanguages:\n  - en\n  - EN\ndefault_language: de\n",
    );
    let r = t.build_err();
    for (message, at) in [
        ("`title` has an entry for `fr`", "vramdoc.yaml:1:1"),
        ("is not an absolute http(s) URL", "vramdoc.yaml:4:1"),
        ("`EN` is listed twice", "vramdoc.yaml:7:5"),
        (
            "default_language `de` is not in `languages`",
            "vramdoc.yaml:8:1",
        ),
    ] {
        assert!(r.stderr.contains(message), "{message}: {}", r.stderr);
        assert!(r.stderr.contains(at), "{at}: {}", r.stderr);
    }
    assert!(
        r.stderr.contains("build failed with 5 errors"),
        "{}",
        r.stderr
    );
}

#[test]
fn a_file_that_cannot_be_replaced_rolls_the_whole_update_back() {
    let t = two_guides();
    t.build_ok();
    let out = t.root().join("public");
    // A file where the build needs a folder: replacing beta's English page must fail, after
    // alpha's pages (planned first) were already moved in.
    std::fs::remove_dir_all(out.join("en/beta")).unwrap();
    std::fs::write(out.join("en/beta"), "in the way\n").unwrap();
    let before = files(&out);
    t.guide("alpha", "en", "alpha", "Second version.");
    t.guide("beta", "en", "beta", "Second version.");
    let r = t.build_err();
    assert!(r.stderr.contains("cannot replace"), "{}", r.stderr);
    assert!(r.stderr.contains("was left unchanged"), "{}", r.stderr);
    assert_eq!(files(&out), before, "the output is exactly as it was");
    assert!(!out.join(".vramdoc-manifest/dirty").exists());
    assert_eq!(
        names(t.root()),
        [".public.lock", "content", "public", "vramdoc.yaml"]
    );

    // Once the obstacle is gone, the update goes through and equals a clean build.
    std::fs::remove_file(out.join("en/beta")).unwrap();
    t.build_ok();
    t.run(&["build", "--out", "clean"]);
    assert_eq!(files(&out), files(&t.root().join("clean")));
}

#[test]
fn a_removal_that_fails_puts_back_the_files_already_removed() {
    let t = two_guides();
    t.build_ok();
    let out = t.root().join("public");
    // Removing the deleted guide's English outputs works; its Spanish ones are in the way.
    std::fs::remove_dir_all(out.join("es/alpha")).unwrap();
    std::fs::write(out.join("es/alpha"), "in the way\n").unwrap();
    let before = files(&out);
    std::fs::remove_dir_all(t.root().join("content/alpha")).unwrap();
    let r = t.build_err();
    assert!(r.stderr.contains("cannot remove"), "{}", r.stderr);
    assert!(r.stderr.contains("was left unchanged"), "{}", r.stderr);
    assert_eq!(files(&out), before, "the output is exactly as it was");
    assert!(out.join("en/alpha").is_dir(), "the removed folder is back");
}

#[test]
fn leftovers_of_killed_builds_are_removed_and_only_those() {
    let t = two_guides();
    t.build_ok();
    for left in [
        ".public.staging-Ab12Cd",
        ".public.staging-Ab12Cd.old",
        ".public.old",
    ] {
        t.file(&format!("{left}/.vramdoc-build"), "marker\n");
        t.file(&format!("{left}/en/index.html"), "stale\n");
    }
    // Named like a staging folder but not marked as vramdoc's: not ours to delete.
    t.file(".public.staging-mine/notes.txt", "keep me\n");
    let r = t.run(&["build", "--force"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(
        names(t.root()),
        [
            ".public.lock",
            ".public.staging-mine",
            "content",
            "public",
            "vramdoc.yaml"
        ]
    );
    // An incremental build cleans up too.
    t.file(".public.staging-Zz99/.vramdoc-build", "marker\n");
    t.build_ok();
    assert!(!t.root().join(".public.staging-Zz99").exists());
}

#[test]
fn a_killed_build_leaves_nothing_the_next_build_keeps() {
    let t = SiteTest::new();
    for i in 0..300 {
        t.guide(
            &format!("g{i}"),
            "en",
            "G",
            "Body text.\n\n```python\nx = 1\n```",
        );
    }
    let mut child = Command::new(env!("CARGO_BIN_EXE_vramdoc"))
        .args(["build", "--quiet"])
        .current_dir(t.root())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    // Killed while it renders into its staging folder.
    let start = Instant::now();
    let rendering = || {
        names(t.root())
            .iter()
            .filter(|n| n.starts_with(".public.staging-"))
            .any(|n| t.root().join(n).join("en").is_dir())
    };
    while !rendering() {
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "no staging folder"
        );
        assert!(child.try_wait().unwrap().is_none(), "the build ended first");
        std::thread::sleep(Duration::from_millis(1));
    }
    child.kill().unwrap();
    let _ = child.wait();
    assert!(rendering(), "the killed build left its staging folder");
    t.build_ok();
    assert_eq!(
        names(t.root()),
        [".public.lock", "content", "public", "vramdoc.yaml"]
    );
}

#[test]
fn concurrent_force_builds_take_turns() {
    let t = two_guides();
    t.build_ok();
    let children: Vec<_> = (0..4)
        .map(|_| {
            Command::new(env!("CARGO_BIN_EXE_vramdoc"))
                .args(["build", "--force"])
                .current_dir(t.root())
                .stdout(Stdio::null())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    for c in children {
        let out = c.wait_with_output().unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    assert_eq!(
        names(t.root()),
        [".public.lock", "content", "public", "vramdoc.yaml"]
    );
    t.run(&["build", "--out", "clean"]);
    // The manifest's shards record a page's file stamp only once it is 2 s old, so whether the
    // last of the four builds recorded them depends on how long the others took: its shards are
    // compared by name, every other file byte for byte.
    let (public, clean) = (
        files(&t.root().join("public")),
        files(&t.root().join("clean")),
    );
    let split = |all: Vec<(PathBuf, Vec<u8>)>| {
        let (manifest, rest): (Vec<_>, Vec<_>) = all
            .into_iter()
            .partition(|(p, _)| p.starts_with(".vramdoc-manifest"));
        (
            manifest.into_iter().map(|(p, _)| p).collect::<Vec<_>>(),
            rest,
        )
    };
    assert_eq!(split(public), split(clean));
}

#[cfg(unix)]
#[test]
fn a_second_build_waits_for_the_lock_and_says_so() {
    use std::os::fd::AsRawFd;
    let t = two_guides();
    let lock = std::fs::File::create(t.root().join(".public.lock")).unwrap();
    assert_eq!(unsafe { libc::flock(lock.as_raw_fd(), libc::LOCK_EX) }, 0);
    let mut child = Command::new(env!("CARGO_BIN_EXE_vramdoc"))
        .arg("build")
        .current_dir(t.root())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // The first line on stderr says it waits (read on a thread: the build blocks meanwhile).
    let stderr = child.stderr.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    let reader = std::thread::spawn(move || {
        let mut lines = std::io::BufRead::lines(std::io::BufReader::new(stderr));
        let _ = tx.send(lines.next().and_then(Result::ok).unwrap_or_default());
        lines.map_while(Result::ok).collect::<Vec<_>>()
    });
    let first = rx.recv_timeout(Duration::from_secs(60)).unwrap();
    assert!(
        first.contains("another vramdoc build is writing"),
        "{first}"
    );
    std::thread::sleep(Duration::from_millis(200));
    assert!(child.try_wait().unwrap().is_none(), "it waits");
    assert!(!t.root().join("public").exists(), "and writes nothing");
    drop(lock);
    let status = child.wait().unwrap();
    let rest = reader.join().unwrap();
    assert!(status.success(), "{rest:?}");
    assert!(t.root().join("public/en/alpha/index.html").is_file());
}

#[cfg(unix)]
#[test]
fn a_symlinked_out_is_written_through_and_stays_a_link() {
    let t = two_guides();
    std::fs::create_dir(t.root().join("real")).unwrap();
    std::os::unix::fs::symlink("real", t.root().join("public")).unwrap();
    t.build_ok();
    t.guide("alpha", "en", "alpha", "Second version.");
    t.build_ok();
    t.run(&["build", "--force"]);
    let link = std::fs::symlink_metadata(t.root().join("public")).unwrap();
    assert!(link.file_type().is_symlink(), "--out is still the link");
    let page = std::fs::read_to_string(t.root().join("real/en/alpha/index.html")).unwrap();
    assert!(page.contains("Second version."));

    // A link that leads nowhere is refused, saying why.
    std::fs::remove_file(t.root().join("public")).unwrap();
    std::os::unix::fs::symlink("missing", t.root().join("public")).unwrap();
    let r = t.build_err();
    assert!(r.stderr.contains("is a symlink to missing"), "{}", r.stderr);
    assert!(!t.root().join("missing").exists());
}

#[cfg(unix)]
#[test]
fn a_fifo_named_like_a_page_is_refused_not_waited_for() {
    let t = two_guides();
    let fifo = std::ffi::CString::new(
        t.root()
            .join("content/alpha/zh.md")
            .to_str()
            .unwrap()
            .as_bytes(),
    )
    .unwrap();
    assert_eq!(unsafe { libc::mkfifo(fifo.as_ptr(), 0o644) }, 0);
    let (code, stderr) = build_within(&t, &[], Duration::from_secs(30));
    assert_ne!(code, 0);
    assert!(
        stderr.contains("not a regular file (it is a FIFO)"),
        "{stderr}"
    );
    assert!(stderr.contains("content/alpha/zh.md"), "{stderr}");
}

#[cfg(unix)]
#[test]
fn symlinks_out_of_the_site_are_refused_unless_the_site_opts_in() {
    let t = two_guides();
    let outside = tempfile::tempdir().unwrap();
    let secret = outside.path().join("secret.md");
    std::fs::write(&secret, "root:x:0:0:SECRET-LINE\n").unwrap();
    std::os::unix::fs::symlink(&secret, t.root().join("content/alpha/zh.md")).unwrap();
    std::os::unix::fs::symlink("/dev/zero", t.root().join("content/beta/zh.md")).unwrap();
    let r = t.build_err();
    assert!(!r.stderr.contains("SECRET-LINE"), "{}", r.stderr);
    assert!(r.stderr.contains("outside the site"), "{}", r.stderr);
    assert!(r.stderr.contains("content/alpha/zh.md"), "{}", r.stderr);
    assert!(r.stderr.contains("content/beta/zh.md"), "{}", r.stderr);
    assert!(
        r.stderr.contains("follow_external_symlinks: true"),
        "{}",
        r.stderr
    );

    // Opted in, the external page is read; /dev/zero still is not (not a regular file).
    t.file(
        "vramdoc.yaml",
        &format!("{CONFIG}follow_external_symlinks: true\n"),
    );
    let (code, stderr) = build_within(&t, &[], Duration::from_secs(30));
    assert_ne!(code, 0);
    assert!(
        stderr.contains("not a regular file (it is a device)"),
        "{stderr}"
    );
    std::fs::remove_file(t.root().join("content/beta/zh.md")).unwrap();
    std::fs::write(
        &secret,
        "---\ntitle: \"Shared\"\nlang: zh\n---\n\nShared page.\n",
    )
    .unwrap();
    t.build_ok();
    assert!(t.output("zh/alpha/index.html").contains("Shared page."));

    // A symlink inside the site is fine without opting in.
    t.file("vramdoc.yaml", CONFIG);
    std::fs::remove_file(t.root().join("content/alpha/zh.md")).unwrap();
    t.file(
        "shared/zh.md",
        "---\ntitle: \"Inside\"\nlang: zh\n---\n\nInside page.\n",
    );
    std::os::unix::fs::symlink(
        t.root().join("shared/zh.md"),
        t.root().join("content/alpha/zh.md"),
    )
    .unwrap();
    t.build_ok();
    assert!(t.output("zh/alpha/index.html").contains("Inside page."));
}

#[cfg(unix)]
#[test]
fn templates_locales_and_data_follow_the_same_rules() {
    let t = two_guides();
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(outside.path().join("base.html"), "SECRET-TEMPLATE").unwrap();
    std::fs::create_dir_all(t.root().join("templates")).unwrap();
    std::os::unix::fs::symlink(
        outside.path().join("base.html"),
        t.root().join("templates/base.html"),
    )
    .unwrap();
    std::fs::create_dir_all(t.root().join("locales/en")).unwrap();
    let fifo = std::ffi::CString::new(
        t.root()
            .join("locales/en/extra.ftl")
            .to_str()
            .unwrap()
            .as_bytes(),
    )
    .unwrap();
    assert_eq!(unsafe { libc::mkfifo(fifo.as_ptr(), 0o644) }, 0);
    std::fs::create_dir_all(t.root().join("data")).unwrap();
    std::os::unix::fs::symlink("/dev/zero", t.root().join("data/gpus.yaml")).unwrap();
    let (code, stderr) = build_within(&t, &[], Duration::from_secs(30));
    assert_ne!(code, 0);
    assert!(!stderr.contains("SECRET-TEMPLATE"), "{stderr}");
    for what in [
        "templates/base.html",
        "locales/en/extra.ftl",
        "data/gpus.yaml",
    ] {
        assert!(stderr.contains(what), "{what}: {stderr}");
    }
    assert!(stderr.contains("build failed with 3 errors"), "{stderr}");
}

#[test]
fn a_page_above_the_size_limit_is_refused() {
    let t = two_guides();
    let big = format!(
        "---\ntitle: \"Big\"\nlang: zh\n---\n\n{}\n",
        "x".repeat(11 * 1024 * 1024)
    );
    t.file("content/alpha/zh.md", &big);
    let r = t.build_err();
    assert!(
        r.stderr.contains("more than the 10 MiB vramdoc reads"),
        "{}",
        r.stderr
    );
    assert!(r.stderr.contains("content/alpha/zh.md"), "{}", r.stderr);
}

#[cfg(unix)]
#[test]
fn a_guide_folder_linked_from_outside_the_site_is_refused() {
    let t = two_guides();
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(
        outside.path().join("en.md"),
        "---\ntitle: \"Outside\"\nlang: en\n---\n\nOUTSIDE-TEXT\n",
    )
    .unwrap();
    std::os::unix::fs::symlink(outside.path(), t.root().join("content/gamma")).unwrap();
    let r = t.build_err();
    assert!(r.stderr.contains("content/gamma"), "{}", r.stderr);
    assert!(r.stderr.contains("outside the site"), "{}", r.stderr);
    t.file(
        "vramdoc.yaml",
        &format!("{CONFIG}follow_external_symlinks: true\n"),
    );
    t.build_ok();
    assert!(t.output("en/gamma/index.html").contains("OUTSIDE-TEXT"));
}
