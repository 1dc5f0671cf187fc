//! Our observation held to WebArena's own: the same pages of the six fixture site-versions,
//! rendered by our observation path (`tabs::observe` in real headless Chromium, as the run loop
//! calls it) and by WebArena's `TextObervationProcessor` (`scripts/webarena-oracle/observe.py`:
//! libwebarena's `ScriptBrowserEnv` on Playwright, in the venv `setup.sh` builds), compared line
//! by line with the printed ids normalised. WebArena's side runs the system Chromium
//! (`/usr/bin/chromium`), ours the browser our workers run (the headless shell when installed):
//! the same build of Blink, not the same binary. Each side signs in with a login of its own.
//!
//! Every differing line must fall in a documented, counted category
//! (docs/webarena.md#observation-parity); the oracle reruns WebArena's own parse and clean steps
//! on the very tree it observed with each of our departures applied in turn, so a category is
//! what one departure explains, not a guess from the text:
//! * `inline_text_box`: lines that go when Chrome's InlineTextBox nodes are left out of the tree
//!   (Chromium returns them since 2023; WebArena's code prints them, we do not);
//! * `id_digits`: what then remains, and goes when the nodes carry our ids instead of Chrome's
//!   (WebArena's StaticText rule also matches the digits of the ids on the three lines before);
//! * `other`: anything else. One such line fails the test, and with both departures applied the
//!   two texts must be the same bytes, ids included.

#![allow(clippy::unwrap_used, clippy::expect_used)] // a test crate: a failed unwrap is a failed test

#[path = "support/oracle.rs"]
mod oracle;

#[path = "support/cli.rs"]
mod cli;

use cli::root;

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::Arc;

use serde_json::json;
use skillshift_common::{Site, Version};
use skillshift_worker::browser::{BrowserConfig, Driver, Session};
use skillshift_worker::tabs::{self, Tabs};

/// Pages taken from each site-version (its tasks' start and check URLs, spread evenly).
const PER_SITE_VERSION: usize = 9;

/// Pages no task starts on that hold what the tasks' pages lack: the posts and comments lists,
/// whose row actions say `Quick&nbsp;Edit` (a `\xa0` in a name).
const EXTRA: &[(Site, &str)] =
    &[(Site::Wordpress, "/wp-admin/edit.php"), (Site::Wordpress, "/wp-admin/edit-comments.php")];

fn oracle_python() -> Option<PathBuf> {
    oracle::venv_python("webarena-oracle", "SKILLSHIFT_ORACLE_DIR", "observation_parity", "WebArena's browser_env")
}

/// The distinct paths the tasks of a site-version start on or check, `n` of them spread evenly.
fn pages(site: Site, version: Version, n: usize) -> Vec<String> {
    let mut all: Vec<String> = Vec::new();
    for g in skillshift_sites::tasks(site, version) {
        let mut urls = vec![g.task.start_url.clone()];
        urls.extend(g.task.eval.program_html.iter().map(|c| c.url.to_string()).filter(|u| u != "last"));
        for u in urls {
            let path = u.replace(site.placeholder(), "");
            let path = if path.is_empty() { "/".to_string() } else { path };
            if !all.contains(&path) {
                all.push(path);
            }
        }
    }
    let step = (all.len() as f64 / n as f64).max(1.0);
    let mut picked: Vec<String> =
        (0..n).map(|i| (i as f64 * step) as usize).filter(|&i| i < all.len()).map(|i| all[i].clone()).collect();
    for (_, extra) in EXTRA.iter().filter(|(s, _)| *s == site) {
        if !picked.iter().any(|p| p == extra) {
            picked.push(extra.to_string());
        }
    }
    picked
}

/// A line with its printed id (`[123]`, `[-1000000004]`) blanked: `\t\t[] link 'Issues'`.
fn normalise(line: &str) -> String {
    let body = line.trim_start_matches('\t');
    let indent = &line[..line.len() - body.len()];
    if let Some(rest) = body.strip_prefix('[') {
        if let Some(end) = rest.find(']') {
            let id = &rest[..end];
            if !id.is_empty() && id.trim_start_matches('-').bytes().all(|b| b.is_ascii_digit()) {
                return format!("{indent}[]{}", &rest[end + 1..]);
            }
        }
    }
    line.to_string()
}

/// Lines only in `a` and lines only in `b` (the shortest edit script, Myers' O(ND) walk).
fn diff(a: &[String], b: &[String]) -> (usize, usize) {
    let (n, m) = (a.len() as isize, b.len() as isize);
    let max = (n + m) as usize;
    let offset = max as isize + 1;
    let mut v = vec![0isize; 2 * max + 3];
    for d in 0..=max as isize {
        let mut k = -d;
        while k <= d {
            let at = |k: isize| (k + offset) as usize;
            let mut x =
                if k == -d || (k != d && v[at(k - 1)] < v[at(k + 1)]) { v[at(k + 1)] } else { v[at(k - 1)] + 1 };
            let mut y = x - k;
            while x < n && y < m && a[x as usize] == b[y as usize] {
                x += 1;
                y += 1;
            }
            v[at(k)] = x;
            if x >= n && y >= m {
                // d = only_a + only_b and only_a - only_b = n - m.
                let only_a = ((d + n - m) / 2) as usize;
                return (only_a, d as usize - only_a);
            }
            k += 2;
        }
    }
    (a.len(), b.len())
}

fn lines(text: &str, normalised: bool) -> Vec<String> {
    text.lines().map(|l| if normalised { normalise(l) } else { l.to_string() }).collect()
}

#[derive(Default, Debug)]
struct Tally {
    pages: usize,
    identical_pages: usize,
    ours: usize,
    webarena: usize,
    /// WebArena's lines that print an InlineTextBox node.
    webarena_inline: usize,
    same: usize,
    inline_text_box: usize,
    id_digits: usize,
    other: usize,
}

/// What our side saw of one page.
struct Ours {
    key: String,
    url: String,
    text: String,
}

/// Our observation of every page of one site-version, in one signed-in session.
async fn observe_ours(driver: &Arc<Driver>, base: &str, cookies: &[(String, String)], paths: &[String]) -> Vec<Ours> {
    let session = Session::open(driver).await.expect("opening a browser session");
    for (name, value) in cookies {
        let params = json!({"name": name, "value": value, "url": format!("{base}/"), "httpOnly": true});
        session.cdp("Network.setCookie", params).await.expect("setting the login cookie");
    }
    let tabs = Tabs::adopt(&session).await.expect("adopting the tab");
    let mut out = Vec::new();
    for path in paths {
        let url = format!("{base}{path}");
        session.goto(&url).await.unwrap_or_else(|e| panic!("opening {url}: {e}"));
        let snap = tabs::observe(&session, &tabs).await.unwrap_or_else(|e| panic!("observing {url}: {e}"));
        out.push(Ours { key: String::new(), url, text: snap.text });
    }
    session.close().await;
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn our_observation_is_webarenas_up_to_counted_departures() {
    let Some(python) = oracle_python() else { return };
    let mut handles = Vec::new();
    for &site in Site::ALL {
        for &version in Version::ALL {
            let handle = skillshift_sites::serve(site, version, SocketAddr::from(([127, 0, 0, 1], 0))).await.unwrap();
            handles.push((site, version, handle));
        }
    }

    // Ours first, one signed-in session per site-version, then WebArena's, with a login of its own.
    let driver = Arc::new(Driver::new(BrowserConfig::default()));
    let mut ours: Vec<Ours> = Vec::new();
    let mut groups = Vec::new();
    for (site, version, handle) in &handles {
        let paths = pages(*site, *version, PER_SITE_VERSION);
        let cookies = handle.login_cookies().await.unwrap();
        let mut seen = observe_ours(&driver, &handle.base_url, &cookies, &paths).await;
        for (o, path) in seen.iter_mut().zip(&paths) {
            o.key = format!("{} {path}", handle.image());
        }
        let theirs = handle.login_cookies().await.unwrap();
        groups.push(json!({
            "cookies": theirs.iter().map(|(n, v)| json!({"name": n, "value": v, "url": format!("{}/", handle.base_url)})).collect::<Vec<_>>(),
            "pages": seen.iter().map(|o| json!({"key": o.key, "url": o.url})).collect::<Vec<_>>(),
        }));
        ours.extend(seen);
    }
    driver.shutdown().await;
    let request = json!({"groups": groups, "current_viewport_only": false});
    let theirs = tokio::task::spawn_blocking(move || oracle::observe(&python, &request)).await.unwrap();
    assert_eq!(theirs.len(), ours.len(), "one observation per page");

    // Both sides of every page, for reading a difference: target/observation-parity/.
    let dump = root().join("target/observation-parity");
    std::fs::create_dir_all(&dump).unwrap();
    println!();
    let mut tally = Tally::default();
    let mut failures = Vec::new();
    let mut coverage: BTreeMap<&str, usize> = BTreeMap::new();
    for (o, w) in ours.iter().zip(&theirs) {
        assert_eq!(w["key"], o.key.as_str());
        if let Some(e) = w["error"].as_str() {
            failures.push(format!("{}: WebArena could not observe it: {e}", o.key));
            continue;
        }
        let text = w["text"].as_str().unwrap();
        let (no_inline, our_ids) = (w["no_inline"].as_str().unwrap(), w["our_ids"].as_str().unwrap());
        let file: String = o.key.chars().map(|c| if c.is_ascii_alphanumeric() || c == '-' { c } else { '_' }).collect();
        for (side, t) in [("ours", o.text.as_str()), ("webarena", text), ("no_inline", no_inline), ("our_ids", our_ids)]
        {
            std::fs::write(dump.join(format!("{file}.{side}.txt")), t).unwrap();
        }
        let mine = lines(&o.text, true);
        let (only_ours, only_theirs) = diff(&mine, &lines(text, true));
        let d0 = only_ours + only_theirs;
        let (a, b) = diff(&mine, &lines(no_inline, true));
        let d1 = a + b;
        let (a, b) = diff(&mine, &lines(our_ids, true));
        let other = a + b;
        let exact = o.text == our_ids;
        let webarena_lines = text.lines().count();
        tally.pages += 1;
        tally.identical_pages += usize::from(d0 == 0);
        tally.ours += mine.len();
        tally.webarena += webarena_lines;
        tally.webarena_inline +=
            text.lines().filter(|l| normalise(l).trim_start().starts_with("[] InlineTextBox ")).count();
        tally.same += webarena_lines - only_theirs;
        tally.inline_text_box += d0.saturating_sub(d1);
        tally.id_digits += d1.saturating_sub(other);
        tally.other += other;
        println!(
            "{:<40} ours {:>5} webarena {:>5} identical {:>5} differing {:>4} (inline_text_box {}, id_digits {}, other {})",
            o.key,
            mine.len(),
            webarena_lines,
            webarena_lines - only_theirs,
            d0,
            d0.saturating_sub(d1),
            d1.saturating_sub(other),
            other
        );
        if other > 0 || !exact {
            failures.push(format!(
                "{}: {other} line(s) differ beyond the counted departures\n--- ours\n{}\n--- WebArena's code, both departures applied\n{our_ids}",
                o.key, o.text
            ));
        }
        // What kinds of page the comparison covered.
        let body = text.split_once("\n\n").map_or("", |(_, b)| b);
        for (kind, hit) in [
            ("form", body.contains("] textbox ") || body.contains("] combobox ")),
            ("table", body.contains("] table ") || body.contains("] columnheader ")),
            ("menu", body.contains("] menu") || body.contains("] navigation ") || body.contains("] menubar ")),
            ("long list (100+ lines)", webarena_lines >= 100),
            ("non-ASCII", !body.is_ascii()),
            ("\\xa0", body.contains("\\xa0")),
        ] {
            *coverage.entry(kind).or_default() += usize::from(hit);
        }
    }
    println!("{tally:?}");
    let share = |n: usize, of: usize| 100.0 * n as f64 / of.max(1) as f64;
    println!(
        "identical: {:.1}% of WebArena's lines, {:.1}% of them but its InlineTextBox lines, {:.1}% of ours",
        share(tally.same, tally.webarena),
        share(tally.same, tally.webarena - tally.webarena_inline),
        share(tally.same, tally.ours)
    );
    println!("coverage (pages): {coverage:?}");
    let distinct: std::collections::HashSet<&str> = ours.iter().map(|o| o.key.as_str()).collect();
    assert!(distinct.len() >= 40, "at least 40 distinct pages compared, got {}", distinct.len());
    for (kind, n) in &coverage {
        assert!(*n > 0, "no page of kind {kind} was compared");
    }
    assert!(
        failures.is_empty(),
        "{} page(s) differ beyond the counted departures:\n{}",
        failures.len(),
        failures.join("\n\n")
    );
    assert_eq!(tally.other, 0);
    drop(handles);
}

#[test]
fn observe_py_refuses_bad_input_with_one_line_and_exit_2() {
    let Some(python) = oracle_python() else { return };
    for (input, expected) in [
        ("not json", "observe.py: stdin: not JSON"),
        (r#"{"pages": []}"#, "observe.py: stdin: expected an object with a \"groups\" list"),
        (
            r#"{"groups": [{"pages": [{"key": 1}]}]}"#,
            "observe.py: stdin: groups[0].pages[0]: expected {\"key\", \"url\"}",
        ),
        // A group cannot start with go_back: there is nothing to go back to.
        (
            r#"{"groups": [{"pages": [{"key": "a", "action": "go_back"}]}]}"#,
            "observe.py: stdin: groups[0].pages[0]: expected {\"key\", \"url\"} or, after the first,",
        ),
        (
            r#"{"groups": [{"pages": [{"key": "a", "url": "http://127.0.0.1:9/"}, {"key": "b", "action": "reload"}]}]}"#,
            "observe.py: stdin: groups[0].pages[1]: expected",
        ),
        // An action and a URL: which one was meant is not guessed.
        (
            r#"{"groups": [{"pages": [{"key": "a", "url": "http://127.0.0.1:9/"}, {"key": "b", "url": "http://127.0.0.1:9/", "action": "go_back"}]}]}"#,
            "observe.py: stdin: groups[0].pages[1]: expected",
        ),
        (
            r#"{"groups": [{"pages": [{"key": "a", "url": "http://127.0.0.1:9/", "action": "reload"}]}]}"#,
            "observe.py: stdin: groups[0].pages[0]: expected",
        ),
    ] {
        let mut child = Command::new(&python)
            .arg(root().join("scripts/webarena-oracle/observe.py"))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        {
            use std::io::Write;
            child.stdin.take().unwrap().write_all(input.as_bytes()).unwrap();
        }
        let out = child.wait_with_output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{input}: {stderr}");
        assert_eq!(stderr.lines().count(), 1, "{input}: one line: {stderr}");
        assert!(stderr.starts_with(expected), "{input}: {stderr}");
        assert!(out.stdout.is_empty(), "{input}: nothing on stdout");
    }
}
