//! WebArena-Verified's evaluators against the package's own: every case is
//! scored by `skillshift_common::evaluate::verified` and by `webarena-verified`
//! 1.2.3 (`scripts/webarena-verified-oracle/oracle.py`, in a venv that
//! `scripts/webarena-verified-oracle/setup.sh` builds once under
//! `target/webarena-verified-oracle`, or `SKILLSHIFT_VERIFIED_ORACLE_DIR`),
//! and the two must give the same status for the task and for each evaluator.
//!
//! The cases are built from the package's own dataset (all 812 tasks, which
//! must all load): per task, the gold response, wrong ones (status, data,
//! task type), plain text, a fenced code block and the legacy field name;
//! per task with a `NetworkEventEvaluator`, a HAR synthesized from its
//! expected events, and mutations of it (wrong status, wrong method, a
//! missing post field or query parameter, an extra query parameter, a wrong
//! post value, no event at all). Each case's HAR is a file both sides read.
//! Where the two disagree, the departure must be one `docs/webarena.md`
//! documents; the test counts them and fails when there are more than the
//! documented count.
//!
//! `skillshift score --evaluator webarena-verified` is run on a few cases too,
//! and on bad input (one line, exit 2).
//!
//! A second test records its traces: `skillshift local` runs ten fixture
//! tasks in real Chromium, and each trajectory's `network` part is a HAR
//! scored with `NetworkEventEvaluator`s written for those tasks and their
//! variants (wrong status, method, URL, post field, query parameter,
//! `should_not_exist`, ...), by both sides again (`docs/webarena.md`,
//! "Traces recorded from real attempts").
//!
//! Skipped, loudly, only when the package registry cannot be reached; under
//! CI (`CI` set) that is a failure.

#![allow(clippy::unwrap_used, clippy::expect_used)] // a test: a failed unwrap is a failed test

#[path = "support/oracle.rs"]
mod oracle;

#[path = "support/cli.rs"]
mod cli;

use cli::root;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use serde_json::{json, Map, Value};
use skillshift_common::evaluate::verified::{evaluate_verified, EvalStatus};
use skillshift_common::har::Har;
use skillshift_common::task::validate::validate_file;
use skillshift_common::task::{SiteBases, SiteKey, Task};

/// Disagreements with the package that `docs/webarena.md` ("WebArena-Verified", departures) documents.
const DOCUMENTED_DEPARTURES: usize = 0;

const SITES: [(SiteKey, &str); 7] = [
    (SiteKey::Gitlab, "http://localhost:8023"),
    (SiteKey::Shopping, "http://localhost:7770"),
    (SiteKey::ShoppingAdmin, "http://localhost:7780/admin"),
    (SiteKey::Reddit, "http://localhost:9999"),
    (SiteKey::Map, "http://localhost:3000"),
    (SiteKey::Wikipedia, "http://localhost:8888"),
    (SiteKey::Homepage, "http://localhost:4399"),
];

fn bases() -> SiteBases {
    let mut b = SiteBases::default();
    for (k, u) in SITES {
        b.insert(k, u);
    }
    b
}

fn oracle_python() -> Option<PathBuf> {
    oracle::venv_python(
        "webarena-verified-oracle",
        "SKILLSHIFT_VERIFIED_ORACLE_DIR",
        "score_webarena_verified",
        "webarena-verified",
    )
}

/// The dataset inside the installed package.
fn dataset(python: &Path) -> PathBuf {
    let out = Command::new(python)
        .args(["-c", "import webarena_verified, os; print(os.path.join(os.path.dirname(webarena_verified.__file__), 'assets', 'dataset', 'webarena-verified.json'))"])
        .output()
        .expect("asking the venv for the dataset");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    PathBuf::from(String::from_utf8_lossy(&out.stdout).trim().to_string())
}

fn render(s: &str) -> String {
    bases().replace(s)
}

/// A concrete string a `^...$` pattern is likely to match (both sides judge it anyway).
fn from_regex(p: &str) -> String {
    let mut s = p.trim_start_matches('^').trim_end_matches('$').to_string();
    for (from, to) in [
        (r"\d+", "1"),
        (r"\d", "1"),
        (".*", ""),
        (".+", "x"),
        ("[^/]+", "x"),
        (r"\.", "."),
        (r"\?", "?"),
        (r"\[", "["),
        (r"\]", "]"),
        (r"\-", "-"),
        (r"\/", "/"),
        (r"\s", " "),
        ("?:", ""),
    ] {
        s = s.replace(from, to);
    }
    // Lookarounds go; a group of alternatives keeps its first.
    let mut out = String::new();
    let mut depth = 0;
    let mut skip_depth: Option<i32> = None;
    let mut skip_alt = false;
    let chars: Vec<char> = s.chars().collect();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if c == '(' {
            depth += 1;
            if chars.get(i + 1) == Some(&'?') && skip_depth.is_none() {
                skip_depth = Some(depth);
            }
        } else if c == ')' {
            if skip_depth == Some(depth) {
                skip_depth = None;
            }
            depth -= 1;
            skip_alt = false;
        } else if c == '|' && skip_depth.is_none() {
            skip_alt = true;
        } else if skip_depth.is_none() && !skip_alt && !matches!(c, '^' | '$') {
            out.push(c);
        }
        i += 1;
    }
    out
}

fn concrete(v: &Value) -> String {
    match v {
        Value::String(s) if s.starts_with('^') && s.ends_with('$') && s.len() >= 2 => render(&from_regex(s)),
        Value::String(s) => render(s),
        Value::Array(a) => a.first().map(concrete).unwrap_or_default(),
        other => other.to_string(),
    }
}

fn enc(s: &str) -> String {
    let mut out = String::new();
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || b"-._~[]".contains(&b) {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// A value for a request body: a list of alternatives gives its first; a one-item list stays a list.
fn body_value(v: &Value) -> Value {
    match v {
        Value::Array(a) if a.len() >= 2 => body_value(&a[0]),
        Value::String(s) if s.starts_with('^') && s.ends_with('$') && s.len() >= 2 => Value::String(from_regex(s)),
        Value::String(s) => Value::String(render(s)),
        other => other.clone(),
    }
}

/// Sets `path` (`$.a.b`, `$.a[0].b`, `$['a-b']`) in `root` to `v`, building what is missing.
fn set_path(root: &mut Value, path: &str, v: Value) {
    let mut steps: Vec<Result<String, usize>> = Vec::new();
    let rest = path.trim_start_matches('$');
    let mut cur = String::new();
    let mut chars = rest.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '.' => {
                if !cur.is_empty() {
                    steps.push(Ok(std::mem::take(&mut cur)));
                }
            }
            '[' => {
                if !cur.is_empty() {
                    steps.push(Ok(std::mem::take(&mut cur)));
                }
                let inner: String = chars.by_ref().take_while(|c| *c != ']').collect();
                let inner = inner.trim_matches(|c| c == '\'' || c == '"');
                match inner.parse::<usize>() {
                    Ok(n) => steps.push(Err(n)),
                    Err(_) if inner.starts_with('?') => steps.push(Err(0)),
                    Err(_) => steps.push(Ok(inner.to_string())),
                }
            }
            c => cur.push(c),
        }
    }
    if !cur.is_empty() {
        steps.push(Ok(cur));
    }
    let mut node = root;
    for (i, step) in steps.iter().enumerate() {
        let last = i + 1 == steps.len();
        match step {
            Ok(name) => {
                if !node.is_object() {
                    *node = Value::Object(Map::new());
                }
                let m = node.as_object_mut().unwrap();
                if last {
                    m.insert(name.clone(), v);
                    return;
                }
                node = m.entry(name.clone()).or_insert(Value::Null);
            }
            Err(n) => {
                if !node.is_array() {
                    *node = Value::Array(Vec::new());
                }
                let a = node.as_array_mut().unwrap();
                while a.len() <= *n {
                    a.push(Value::Null);
                }
                if last {
                    a[*n] = v;
                    return;
                }
                node = &mut a[*n];
            }
        }
    }
}

/// One request of a synthesized trace.
#[derive(Clone)]
struct Req {
    method: String,
    url: String,
    headers: Vec<(String, String)>,
    post: Option<(String, String)>,
    status: i64,
    content: Option<(String, String)>,
    cookies: Vec<(String, String)>,
}

impl Req {
    fn json(&self) -> Value {
        let mut request = json!({"method": self.method, "url": self.url,
            "headers": self.headers.iter().map(|(n, v)| json!({"name": n, "value": v})).collect::<Vec<_>>()});
        if let Some((mime, text)) = &self.post {
            request["postData"] = json!({"mimeType": mime, "text": text});
        }
        let mut response = json!({"status": self.status, "cookies": self.cookies.iter().map(|(n, v)| json!({"name": n, "value": v})).collect::<Vec<_>>()});
        if let Some((mime, text)) = &self.content {
            response["content"] = json!({"size": text.len(), "mimeType": mime, "text": text});
        }
        json!({"request": request, "response": response})
    }
}

fn filler() -> Req {
    Req {
        method: "GET".into(),
        url: "http://localhost:8023/assets/app.css".into(),
        headers: vec![("Accept".into(), "text/css".into())],
        post: None,
        status: 200,
        content: None,
        cookies: vec![],
    }
}

/// The request a network evaluator expects, as a browser would send it.
fn request_for(cfg: &Value) -> Req {
    let exp = &cfg["expected"];
    let method = exp["http_method"].as_str().unwrap_or("GET").to_string();
    let mut url = concrete(&exp["url"]);
    if let Some(q) = exp["query_params"].as_object() {
        let parts: Vec<String> = q.iter().map(|(k, v)| format!("{}={}", enc(k), enc(&concrete(v)))).collect();
        url = format!("{url}{}{}", if url.contains('?') { "&" } else { "?" }, parts.join("&"));
    }
    let mut headers = vec![(
        "Accept".to_string(),
        if method == "GET" { "text/html,application/xhtml+xml" } else { "application/json" }.to_string(),
    )];
    if let Some(h) = exp["headers"].as_object() {
        for (k, v) in h {
            headers.push((k.clone(), concrete(v)));
        }
    }
    let post = exp["post_data"].as_object().map(|p| {
        if p.keys().any(|k| k.starts_with('$') || k.starts_with('^')) {
            let mut body = Value::Object(Map::new());
            for (k, v) in p {
                if k.starts_with("$.^") || k.starts_with('^') {
                    let key = from_regex(k.trim_start_matches("$."));
                    set_path(&mut body, &format!("$['{key}']"), body_value(v));
                } else if k.starts_with('$') {
                    set_path(&mut body, k, body_value(v));
                } else {
                    set_path(&mut body, &format!("$['{k}']"), body_value(v));
                }
            }
            ("application/json".to_string(), body.to_string())
        } else {
            let parts: Vec<String> = p
                .iter()
                .map(|(k, v)| {
                    let text = match body_value(v) {
                        Value::String(s) => s,
                        Value::Null => String::new(),
                        other => other.to_string(),
                    };
                    format!("{}={}", enc(k), enc(&text))
                })
                .collect();
            ("application/x-www-form-urlencoded".to_string(), parts.join("&"))
        }
    });
    let content = exp["response_content"].as_object().map(|c| {
        let mut body = Value::Object(Map::new());
        for (k, v) in c {
            let path = if k.starts_with('$') { k.clone() } else { format!("$['{k}']") };
            set_path(&mut body, &path, body_value(v));
        }
        ("application/json".to_string(), body.to_string())
    });
    let cookies = exp["response_cookies"]
        .as_object()
        .map(|c| c.iter().map(|(k, v)| (k.clone(), enc(&concrete(v)))).collect())
        .unwrap_or_default();
    Req { method, url, headers, post, status: exp["response_status"].as_i64().unwrap_or(200), content, cookies }
}

struct Case {
    id: String,
    task_id: u32,
    response: Option<String>,
    har: Vec<Req>,
}

fn gold_data(rd: &Value, schema: &Value) -> Value {
    let coords = schema["items"]["format"] == "coordinates";
    match rd {
        Value::Array(items) => Value::Array(
            items
                .iter()
                .map(|i| match i {
                    Value::Array(alts) if !coords && !alts.is_empty() => alts[0].clone(),
                    Value::Object(m) => Value::Object(
                        m.iter()
                            .map(|(k, v)| {
                                let v = match v {
                                    Value::Array(a)
                                        if !a.is_empty() && schema["items"]["properties"][k]["type"] != "array" =>
                                    {
                                        a[0].clone()
                                    }
                                    other => other.clone(),
                                };
                                (k.clone(), v)
                            })
                            .collect(),
                    ),
                    other => other.clone(),
                })
                .collect(),
        ),
        other => other.clone(),
    }
}

/// The month names, for rewriting dates.
const MONTHS: [&str; 12] = [
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
];

/// The same value written as an agent might write it, by the schema's type.
fn reword(v: &Value, item: &Value) -> Value {
    let format = item["format"].as_str().or_else(|| item["type"].as_str()).unwrap_or("string");
    match (format, v) {
        ("string", Value::String(s)) => json!(format!("\"{}.\"", s.to_uppercase())),
        ("number" | "integer", Value::Number(n)) => {
            let f = n.as_f64().unwrap_or(0.0);
            if f.abs() >= 1000.0 && f.fract() == 0.0 {
                let i = f as i64;
                json!(format!("{},{:03}", i / 1000, (i % 1000).abs()))
            } else {
                json!(format!("{f}"))
            }
        }
        ("currency", Value::Number(n)) => json!(format!("${:.2}", n.as_f64().unwrap_or(0.0))),
        ("currency", Value::String(s)) => json!(s.replace('$', "USD ")),
        ("date", Value::String(s)) => {
            let parts: Vec<&str> = s.split('-').collect();
            match parts.as_slice() {
                [y, m, d] if y.len() == 4 => match (m.parse::<usize>(), d.parse::<u32>()) {
                    (Ok(m), Ok(d)) if (1..=12).contains(&m) => json!(format!("{} {d}, {y}", MONTHS[m - 1])),
                    _ => v.clone(),
                },
                _ => json!(s.to_lowercase()),
            }
        }
        ("month", Value::String(s)) => json!(s.chars().take(3).collect::<String>().to_lowercase()),
        ("boolean", Value::Bool(b)) => json!(if *b { "Yes" } else { "no" }),
        ("distance", Value::String(s)) => {
            match s.trim().strip_suffix("km").and_then(|n| n.trim().parse::<f64>().ok()) {
                Some(km) => json!(format!("{} m", km * 1000.0)),
                None => json!(s.to_uppercase()),
            }
        }
        ("duration", Value::String(s)) => json!(s.replace("min", "minutes").replace("h ", " hours ")),
        ("coordinates", Value::Array(a)) if a.len() == 2 => json!(format!("{}, {}", a[0], a[1])),
        ("location-name", Value::String(s)) => {
            let mut w: Vec<&str> = s.split_whitespace().collect();
            w.reverse();
            json!(w.join(" "))
        }
        ("url", Value::String(s)) => json!(format!("{}/", render(s))),
        (_, Value::Object(m)) => {
            Value::Object(m.iter().map(|(k, x)| (k.clone(), reword(x, &item["properties"][k.as_str()]))).collect())
        }
        _ => v.clone(),
    }
}

/// The expected data with every alternative's last choice.
fn last_alternatives(rd: &Value, schema: &Value) -> Option<Value> {
    let coords = schema["items"]["format"] == "coordinates";
    let items = rd.as_array()?;
    let mut any = false;
    let out = items
        .iter()
        .map(|i| match i {
            Value::Array(alts) if !coords && alts.len() >= 2 => {
                any = true;
                alts[alts.len() - 1].clone()
            }
            other => other.clone(),
        })
        .collect();
    any.then_some(Value::Array(out))
}

fn cases(raw_tasks: &[Value]) -> Vec<Case> {
    let mut out = Vec::new();
    for (n, t) in raw_tasks.iter().enumerate() {
        let id = t["task_id"].as_u64().unwrap() as u32;
        let evals = t["eval"].as_array().unwrap();
        let ar = evals.iter().find(|e| e["evaluator"] == "AgentResponseEvaluator").unwrap();
        let exp = &ar["expected"];
        let task_type = exp["task_type"].as_str().unwrap_or("retrieve");
        let status = exp["status"].as_str().unwrap_or("SUCCESS");
        let data = gold_data(&exp["retrieved_data"], &ar["results_schema"]);
        let gold = json!({"task_type": task_type.to_uppercase(), "status": status, "retrieved_data": data});
        let net: Vec<&Value> = evals.iter().filter(|e| e["evaluator"] == "NetworkEventEvaluator").collect();
        let gold_har: Vec<Req> = std::iter::once(filler()).chain(net.iter().map(|c| request_for(c))).collect();
        let mut push = |kind: &str, response: Option<String>, har: Vec<Req>| {
            out.push(Case { id: format!("{id}/{kind}"), task_id: id, response, har });
        };
        push("gold", Some(gold.to_string()), gold_har.clone());
        let mut wrong_status = gold.clone();
        wrong_status["status"] = json!(if status == "SUCCESS" { "NOT_FOUND_ERROR" } else { "SUCCESS" });
        push("wrong-status", Some(wrong_status.to_string()), gold_har.clone());
        let mut wrong_data = gold.clone();
        if task_type.eq_ignore_ascii_case("retrieve") {
            wrong_data["retrieved_data"] = json!(["definitely not it", 12345]);
        } else {
            wrong_data["task_type"] =
                json!(if task_type.eq_ignore_ascii_case("navigate") { "MUTATE" } else { "NAVIGATE" });
        }
        push("wrong-data", Some(wrong_data.to_string()), gold_har.clone());
        let words = match &data {
            Value::Array(items) => {
                items.iter().map(|i| i.as_str().map_or(i.to_string(), str::to_string)).collect::<Vec<_>>().join(", ")
            }
            _ => "done".to_string(),
        };
        push("plain", Some(format!("The answer is {words}.")), gold_har.clone());
        if let Value::Array(items) = &data {
            let mut reworded = gold.clone();
            reworded["retrieved_data"] =
                Value::Array(items.iter().map(|i| reword(i, &ar["results_schema"]["items"])).collect());
            if reworded != gold {
                push("reworded", Some(reworded.to_string()), gold_har.clone());
            }
            let mut reversed = gold.clone();
            let mut rev = items.clone();
            rev.reverse();
            reversed["retrieved_data"] = Value::Array(rev);
            if items.len() > 1 {
                push("reordered", Some(reversed.to_string()), gold_har.clone());
            }
        }
        if let Some(alt) = last_alternatives(&exp["retrieved_data"], &ar["results_schema"]) {
            let mut other = gold.clone();
            other["retrieved_data"] = alt;
            push("other-alternative", Some(other.to_string()), gold_har.clone());
        }
        if n % 3 == 0 {
            push("fenced", Some(format!("Here it is:\n```json\n{gold:#}\n```")), gold_har.clone());
            let mut legacy = gold.clone();
            let m = legacy.as_object_mut().unwrap();
            let tt = m.remove("task_type").unwrap();
            m.insert("performed_operation".into(), json!(tt.as_str().unwrap().to_lowercase()));
            m.insert("status".into(), json!(status.to_lowercase()));
            push("legacy", Some(legacy.to_string()), gold_har.clone());
            push("no-answer", None, gold_har.clone());
        }
        if net.is_empty() {
            continue;
        }
        let g = gold.to_string();
        let first = request_for(net[0]);
        let with_first = |r: Req| -> Vec<Req> {
            std::iter::once(filler()).chain(std::iter::once(r)).chain(net[1..].iter().map(|c| request_for(c))).collect()
        };
        let mut s = first.clone();
        s.status = if s.status == 200 { 500 } else { 200 };
        push("net-status", Some(g.clone()), with_first(s));
        let mut m = first.clone();
        m.method = if m.method == "GET" { "POST".into() } else { "GET".into() };
        push("net-method", Some(g.clone()), with_first(m));
        let mut q = first.clone();
        q.url = format!("{}{}zz_extra=1", q.url, if q.url.contains('?') { "&" } else { "?" });
        push("net-extra-query", Some(g.clone()), with_first(q));
        let mut miss = first.clone();
        match &miss.post {
            Some((mime, text)) if mime.contains("form") => {
                let rest: Vec<&str> = text.split('&').skip(1).collect();
                miss.post = Some((mime.clone(), rest.join("&")));
            }
            Some((mime, text)) => {
                let mut v: Value = serde_json::from_str(text).unwrap();
                if let Some(k) = v.as_object().and_then(|o| o.keys().next().cloned()) {
                    v.as_object_mut().unwrap().remove(&k);
                }
                miss.post = Some((mime.clone(), v.to_string()));
            }
            None if miss.url.contains('?') => {
                miss.url = miss.url.split('?').next().unwrap().to_string();
            }
            None => miss.url = format!("{}/elsewhere", miss.url),
        }
        push("net-missing", Some(g.clone()), with_first(miss));
        if let Some((mime, text)) = &first.post {
            let mut w = first.clone();
            w.post = Some(if mime.contains("form") {
                let mut parts: Vec<String> = text.split('&').map(str::to_string).collect();
                if let Some(p) = parts.first_mut() {
                    let k = p.split('=').next().unwrap_or("").to_string();
                    *p = format!("{k}=zz-wrong");
                }
                (mime.clone(), parts.join("&"))
            } else {
                (mime.clone(), text.replacen(":\"", ":\"zz-wrong ", 1))
            });
            push("net-wrong-value", Some(g.clone()), with_first(w));
        }
        push("net-none", Some(g.clone()), vec![filler()]);
        // The same request as another browser would write it: host case, a trailing slash, the query reordered.
        let mut written = first.clone();
        let (head, query) =
            written.url.split_once('?').map_or((written.url.clone(), None), |(h, q)| (h.to_string(), Some(q)));
        let head = head.replacen("http://localhost", "http://LOCALHOST", 1);
        written.url = match query {
            Some(q) => {
                let mut parts: Vec<&str> = q.split('&').collect();
                parts.reverse();
                format!("{head}/?{}", parts.join("&"))
            }
            None => format!("{head}/"),
        };
        push("net-rewritten", Some(g.clone()), with_first(written));
        // Every matching event is kept, the expected one first and a wrong one last.
        let mut later = first.clone();
        later.status = 404;
        push(
            "net-then-wrong",
            Some(g),
            std::iter::once(filler())
                .chain([first.clone(), later])
                .chain(net[1..].iter().map(|c| request_for(c)))
                .collect(),
        );
    }
    out
}

fn har_of(reqs: &[Req]) -> Value {
    json!({"log": {"version": "1.2", "creator": {"name": "test", "version": "0"}, "entries": reqs.iter().map(Req::json).collect::<Vec<_>>()}})
}

fn status_word(s: &EvalStatus) -> &'static str {
    s.as_str()
}

/// The package's verdicts on `input` (the oracle's cases), in order.
fn package_verdicts(python: &Path, input: &[Value]) -> Vec<Value> {
    let mut child = Command::new(python)
        .arg(root().join("scripts/webarena-verified-oracle/oracle.py"))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    let body = serde_json::to_vec(input).unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let writer = std::thread::spawn(move || std::io::Write::write_all(&mut stdin, &body));
    let out = child.wait_with_output().unwrap();
    writer.join().unwrap().unwrap();
    assert!(out.status.success(), "the oracle failed");
    serde_json::from_slice(&out.stdout).unwrap()
}

#[test]
fn webarena_verified_scores_as_its_package_scores() {
    let Some(python) = oracle_python() else { return };
    let data = dataset(&python);
    // Every task of the package's dataset loads.
    let report = validate_file(&data).unwrap();
    assert_eq!((report.tasks, report.loaded), (812, 812), "{:?}", report.problems.first());
    let tasks: BTreeMap<u32, Task> = report.into_tasks().into_iter().map(|t| (t.task_id, t)).collect();
    let raw: Vec<Value> = serde_json::from_str(&std::fs::read_to_string(&data).unwrap()).unwrap();

    let dir = tempfile::tempdir().unwrap();
    let all = cases(&raw);
    let sites: Map<String, Value> = SITES.iter().map(|(k, u)| (k.as_str().to_string(), json!(u))).collect();
    let mut input = Vec::new();
    for (i, c) in all.iter().enumerate() {
        let path = dir.path().join(format!("{i}.har"));
        std::fs::write(&path, har_of(&c.har).to_string()).unwrap();
        input.push(json!({"id": c.id, "task_file": data, "task_id": c.task_id, "response": c.response,
                          "har": path, "sites": sites}));
    }
    let oracle_started = std::time::Instant::now();
    let theirs = package_verdicts(&python, &input);
    assert_eq!(theirs.len(), all.len());
    let oracle_time = oracle_started.elapsed();
    let hars: Vec<Har> = (0..all.len())
        .map(|i| serde_json::from_str(&std::fs::read_to_string(dir.path().join(format!("{i}.har"))).unwrap()).unwrap())
        .collect();
    let bases = bases();
    let ours_started = std::time::Instant::now();
    let scored: Vec<_> = all
        .iter()
        .zip(&hars)
        .map(|(c, har)| evaluate_verified(&tasks[&c.task_id], c.response.as_deref().unwrap_or(""), har, &bases))
        .collect();
    let ours_time = ours_started.elapsed();
    // Measured, not asserted (docs/performance.md): the package's time includes its start and reading each HAR.
    eprintln!("timing: package {oracle_time:?} for {} cases, ours {ours_time:?} (HARs already parsed)", all.len());

    let mut disagreements: Vec<String> = Vec::new();
    let mut seen: BTreeMap<(String, String), usize> = BTreeMap::new();
    let (mut response_cases, mut network_cases) = (0, 0);
    for (i, (c, t)) in all.iter().zip(&theirs).enumerate() {
        let ours = &scored[i];
        let kind = c.id.split('/').nth(1).unwrap().to_string();
        if kind.starts_with("net") {
            network_cases += 1;
        } else {
            response_cases += 1;
        }
        *seen.entry((kind.clone(), t["status"].as_str().unwrap_or("?").to_string())).or_default() += 1;
        let mut mine = vec![status_word(&ours.status).to_string()];
        mine.extend(ours.evaluators.iter().map(|e| status_word(&e.status).to_string()));
        let mut expected = vec![t["status"].as_str().unwrap_or("?").to_string()];
        expected.extend(
            t["evaluators"].as_array().unwrap().iter().map(|e| e["status"].as_str().unwrap_or("?").to_string()),
        );
        if mine != expected {
            let why: Vec<String> = ours.evaluators.iter().flat_map(|e| e.messages.iter().take(2).cloned()).collect();
            let their_err: Vec<String> = t["evaluators"]
                .as_array()
                .unwrap()
                .iter()
                .filter_map(|e| e["error"].as_str().map(str::to_string))
                .collect();
            disagreements.push(format!(
                "{}: ours {mine:?}, package {expected:?}; ours say {why:?}; package errors {their_err:?}",
                c.id
            ));
        }
    }
    // The command line gives the same verdicts: a few cases of each kind, through `skillshift score`.
    let mut picked: BTreeMap<String, usize> = BTreeMap::new();
    for (i, c) in all.iter().enumerate() {
        let kind = c.id.split('/').nth(1).unwrap().to_string();
        let n = picked.entry(kind).or_default();
        if *n >= 2 {
            continue;
        }
        *n += 1;
        let mut cmd = cli::bin();
        cmd.arg("score").arg(&data).args([
            "--task",
            &c.task_id.to_string(),
            "--evaluator",
            "webarena-verified",
            "--json",
        ]);
        cmd.arg("--network").arg(dir.path().join(format!("{i}.har")));
        for (k, u) in SITES {
            cmd.args(["--site", &format!("{}={u}", k.as_str())]);
        }
        if let Some(r) = &c.response {
            let file = dir.path().join(format!("{i}.response.json"));
            std::fs::write(&file, r).unwrap();
            cmd.arg("--response").arg(&file);
        }
        let out = cmd.output().unwrap();
        assert_eq!(out.status.code(), Some(0), "{}: {}", c.id, String::from_utf8_lossy(&out.stderr));
        let printed: Value = serde_json::from_slice(&out.stdout).unwrap();
        let want = match theirs[i]["status"].as_str().unwrap() {
            "success" => "pass",
            "failure" => "fail",
            _ => "invalid",
        };
        assert_eq!(printed["verdict"], want, "{}: {printed}", c.id);
    }
    eprintln!("cases: {} ({response_cases} on the response, {network_cases} on the trace)", all.len());
    eprintln!("package statuses by case kind: {seen:?}");
    for d in disagreements.iter().take(40) {
        eprintln!("DISAGREE {d}");
    }
    eprintln!("disagreements: {} (documented: {DOCUMENTED_DEPARTURES})", disagreements.len());
    assert!(response_cases >= 150 && network_cases >= 150, "too few cases");
    // The cases are not all alike: gold responses pass, wrong ones fail, somewhere.
    assert!(seen.get(&("gold".to_string(), "success".to_string())).copied().unwrap_or(0) > 100, "{seen:?}");
    assert!(seen.get(&("wrong-status".to_string(), "failure".to_string())).copied().unwrap_or(0) > 100, "{seen:?}");
    assert!(
        // No more than the documented ones (written so while their count is 0).
        disagreements.len().saturating_sub(DOCUMENTED_DEPARTURES) == 0,
        "{} disagreements with webarena-verified, {DOCUMENTED_DEPARTURES} documented",
        disagreements.len()
    );
}

/// Bad input to `score --evaluator webarena-verified`: one line naming what and where, exit 2.
#[test]
fn score_refuses_bad_traces_and_missing_inputs_in_one_line() {
    let dir = tempfile::tempdir().unwrap();
    let task = json!({"sites": ["gitlab"], "task_id": 44, "intent_template_id": 303, "start_urls": ["__GITLAB__"],
        "intent": "Open my todos page", "intent_template": "Open my todos page", "instantiation_dict": {}, "revision": 2,
        "eval": [{"evaluator": "AgentResponseEvaluator", "results_schema": {"type": "null"},
                  "expected": {"task_type": "navigate", "status": "SUCCESS", "retrieved_data": null}},
                 {"evaluator": "NetworkEventEvaluator", "expected": {"url": "__GITLAB__/dashboard/todos"}}]});
    let tasks = dir.path().join("tasks.json");
    std::fs::write(&tasks, json!([task]).to_string()).unwrap();
    let good = dir.path().join("good.har");
    std::fs::write(
        &good,
        har_of(&[Req {
            url: "http://localhost:8023/dashboard/todos".into(),
            headers: vec![("Accept".into(), "text/html".into())],
            ..filler()
        }])
        .to_string(),
    )
    .unwrap();
    let bad = dir.path().join("bad.har");
    std::fs::write(&bad, "{\"log\": 7}").unwrap();
    let empty = dir.path().join("empty.har");
    std::fs::write(&empty, "{\"log\": {\"entries\": []}}").unwrap();
    let run = |extra: &[&str]| {
        let out = cli::bin()
            .arg("score")
            .arg(&tasks)
            .args(["--task", "44", "--evaluator", "webarena-verified"])
            .args(extra)
            .output()
            .unwrap();
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stdout).to_string(),
            String::from_utf8_lossy(&out.stderr).to_string(),
        )
    };
    let site = "gitlab=http://localhost:8023";
    let answer = r#"{"task_type": "NAVIGATE", "status": "SUCCESS"}"#;
    let (code, stdout, _) = run(&["--site", site, "--network", good.to_str().unwrap(), "--response", answer]);
    assert_eq!(code, Some(0));
    assert!(stdout.starts_with("task 44: pass"), "{stdout}");
    let (code, stdout, _) = run(&["--site", site, "--network", good.to_str().unwrap(), "--response", "I opened it."]);
    assert_eq!(code, Some(0));
    assert!(stdout.starts_with("task 44: fail"), "{stdout}");
    for (args, needle) in [
        (vec!["--site", site, "--response", answer], "give the attempt's trace with --network FILE"),
        (vec!["--site", site, "--network", bad.to_str().unwrap()], "bad.har: not a HAR file"),
        (vec!["--site", site, "--network", empty.to_str().unwrap()], "empty.har: the HAR holds no entries"),
        (vec!["--site", site, "--network", "/nonexistent.har"], "/nonexistent.har"),
        (vec!["--network", good.to_str().unwrap()], "give its base URL with --site gitlab=URL"),
    ] {
        let (code, _, stderr) = run(&args);
        assert_eq!(code, Some(2), "{args:?}: {stderr}");
        assert_eq!(stderr.trim().lines().count(), 1, "{stderr}");
        assert!(stderr.contains(needle), "{args:?}: {stderr}");
    }
    // --network belongs to webarena-verified only.
    let out = cli::bin().arg("score").arg(&tasks).args(["--task", "44", "--network"]).arg(&good).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--evaluator webarena-verified"));
}

/// Disagreements on the traces recorded from real attempts (below) that `docs/webarena.md` documents.
const DOCUMENTED_RECORDED_DEPARTURES: usize = 0;

/// A fixture task whose attempt is recorded, and the network evaluator written for it: what the
/// reference solution does on the fixture site, as a WebArena-Verified task would expect it.
struct Recorded {
    site: &'static str,
    family: u32,
    task_type: &'static str,
    expected: Value,
    /// The evaluator's `post_data_schema`, if any.
    post_schema: Option<Value>,
}

/// The WebArena site key each fixture site stands under: the Magento admin is `shopping_admin` (its
/// base ends in `/admin`); WordPress, which WebArena lacks, takes `reddit`'s placeholder (a name only:
/// the evaluators treat every site's placeholder alike).
fn key_of(site: &str) -> (&'static str, &'static str) {
    match site {
        "gitlab" => ("gitlab", "__GITLAB__"),
        "magento" => ("shopping_admin", "__SHOPPING_ADMIN__"),
        _ => ("reddit", "__REDDIT__"),
    }
}

fn recorded_tasks() -> Vec<Recorded> {
    let r = |site, family, task_type, expected: Value, post_schema: Option<Value>| Recorded {
        site,
        family,
        task_type,
        expected,
        post_schema,
    };
    let string = || json!({"type": "string"});
    vec![
        // Retrieve tasks whose solution ends on a list: as navigation tasks, the last page navigated to.
        r("gitlab", 0, "NAVIGATE", json!({"url": "__GITLAB__/datalab/style-guide/-/issues"}), None),
        r(
            "magento",
            0,
            "NAVIGATE",
            json!({"url": "__SHOPPING_ADMIN__/catalog/product/", "query_params": {"search": ["Fusion Bra Top"]}}),
            None,
        ),
        r(
            "wordpress",
            0,
            "NAVIGATE",
            json!({"url": "__REDDIT__/wp-admin/edit.php",
                   "query_params": {"post_type": ["post"], "post_status": ["all"], "s": ["Inside Rock Climbing"]}}),
            None,
        ),
        // Mutations: the request that makes the change.
        r(
            "gitlab",
            7,
            "MUTATE",
            json!({"url": "__GITLAB__/datalab/style-guide/-/issues/9/toggle_state", "http_method": "POST",
                   "response_status": 303}),
            None,
        ),
        r(
            "gitlab",
            9,
            "MUTATE",
            json!({"url": "__GITLAB__/openbench/auth-service/-/milestones", "http_method": "POST",
                   "response_status": 303, "post_data": {"title": "Sprint 40", "due_date": "2027-01-10"}}),
            Some(
                json!({"type": "object", "properties": {"title": string(), "due_date": {"type": "string", "format": "date"}}}),
            ),
        ),
        r(
            "gitlab",
            15,
            "MUTATE",
            json!({"url": "__GITLAB__/-/profile", "http_method": "POST", "response_status": 303,
                   "post_data": {"bio": "Reviewing accessibility fixes since 2015."}}),
            None,
        ),
        r(
            "magento",
            7,
            "MUTATE",
            json!({"url": "__SHOPPING_ADMIN__/catalog/product/save/id/24/", "http_method": "POST",
                   "response_status": 303, "post_data": {"price": "121.99", "sku": "24-YS024"}}),
            Some(
                json!({"type": "object", "properties": {"price": {"type": "string", "format": "currency"}, "sku": string()}}),
            ),
        ),
        r(
            "magento",
            10,
            "MUTATE",
            json!({"url": "__SHOPPING_ADMIN__/customer/index/save/id/32/", "http_method": "POST",
                   "response_status": 303, "post_data": {"group": "General", "email": "fatima.stewart@example.com"}}),
            None,
        ),
        r(
            "wordpress",
            9,
            "MUTATE",
            json!({"url": "__REDDIT__/wp-admin/comment.php", "response_status": 303,
                   "query_params": {"c": ["285"], "action": ["approvecomment"]}}),
            None,
        ),
        r(
            "wordpress",
            13,
            "MUTATE",
            json!({"url": "__REDDIT__/wp-admin/options.php", "http_method": "POST", "response_status": 303,
                   "post_data": {"blogname": "The Weekend Desk", "option_page": "general"}}),
            None,
        ),
    ]
}

/// The evaluator written for a task, and its variants: each named, with whether the package should
/// pass it on the task's own trace (`None`: either way, it is the agreement that counts).
fn network_variants(t: &Recorded, base: &str) -> Vec<(String, Value, Option<bool>)> {
    let mut gold = json!({"evaluator": "NetworkEventEvaluator", "expected": t.expected});
    if let Some(s) = &t.post_schema {
        gold["post_data_schema"] = s.clone();
    }
    let url = t.expected["url"].as_str().unwrap().to_string();
    let (_, placeholder) = key_of(t.site);
    let mut out: Vec<(String, Value, Option<bool>)> = vec![("gold".into(), gold.clone(), Some(true))];
    let mut add = |name: &str, pass: Option<bool>, f: &dyn Fn(&mut Value)| {
        let mut v = gold.clone();
        f(&mut v);
        out.push((name.to_string(), v, pass));
    };
    let status = t.expected["response_status"].as_i64().unwrap_or(200);
    add("wrong-status", Some(false), &|v| {
        v["expected"]["response_status"] = json!(if status == 303 { 200 } else { 404 })
    });
    let method = t.expected["http_method"].as_str().unwrap_or("GET");
    add("wrong-method", None, &|v| v["expected"]["http_method"] = json!(if method == "GET" { "POST" } else { "GET" }));
    add("missing-event", None, &|v| v["expected"]["url"] = json!(format!("{url}/nope")));
    let toggled = url.strip_suffix('/').map(str::to_string).unwrap_or_else(|| format!("{url}/"));
    add("trailing-slash", None, &|v| v["expected"]["url"] = json!(toggled));
    let rendered = url.replace(placeholder, base);
    add("rendered-url", None, &|v| v["expected"]["url"] = json!(rendered));
    add("upper-case-host", None, &|v| v["expected"]["url"] = json!(rendered.to_uppercase()));
    add("regex-url", None, &|v| v["expected"]["url"] = json!(format!("^{url}$")));
    add("alternatives", None, &|v| v["expected"]["url"] = json!([format!("{url}/nope"), url]));
    add("referer", None, &|v| v["expected"]["headers"] = json!({"referer": url}));
    add("should-not-exist", None, &|v| v["should_not_exist"] = json!(true));
    add("should-not-exist-missing", None, &|v| {
        v["should_not_exist"] = json!(true);
        v["expected"]["url"] = json!(format!("{url}/nope"));
    });
    add("every-event", None, &|v| v["last_event_only"] = json!(false));
    add("response-content", Some(false), &|v| v["expected"]["response_content"] = json!({"title": "x"}));
    if let Some(Value::Object(post)) = t.expected.get("post_data") {
        let (k, first) = post.iter().next().map(|(k, v)| (k.clone(), v.as_str().unwrap().to_string())).unwrap();
        // A typed field (a currency) may read past what is appended: the package decides.
        let wrong = if t.post_schema.is_some() { None } else { Some(false) };
        add("post-wrong-value", wrong, &|v| v["expected"]["post_data"][&k] = json!(format!("{first} x")));
        add("post-extra-field", Some(false), &|v| v["expected"]["post_data"]["no_such_field"] = json!("x"));
        add("post-one-field", Some(true), &|v| v["expected"]["post_data"] = json!({&k: first}));
        add("post-upper-case", None, &|v| {
            for (_, x) in v["expected"]["post_data"].as_object_mut().unwrap() {
                *x = json!(x.as_str().unwrap().to_uppercase());
            }
        });
        let word = first.split_whitespace().next().unwrap_or("x").to_string();
        add("post-regex-value", None, &|v| v["expected"]["post_data"][&k] = json!(format!("^.*{word}.*$")));
        add("post-jsonpath-key", None, &|v| {
            let p = v["expected"]["post_data"].as_object_mut().unwrap();
            let x = p.remove(&k).unwrap();
            p.insert(format!("$.^{k}|no_such_field$"), x);
        });
        add("post-ignored-field", None, &|v| {
            v["expected"]["post_data"][&k] = json!("not what was sent");
            v["ignored_post_data_params_patterns"] = json!([k]);
        });
    }
    if let Some(Value::Object(q)) = t.expected.get("query_params") {
        let k = q.keys().next().unwrap().clone();
        add("query-wrong-value", Some(false), &|v| v["expected"]["query_params"][&k] = json!(["not-it"]));
        add("query-extra-key", Some(false), &|v| v["expected"]["query_params"]["zz"] = json!(["1"]));
        add("query-none", None, &|v| {
            v["expected"].as_object_mut().unwrap().remove("query_params");
        });
        add("query-ignored-key", None, &|v| {
            v["expected"]["query_params"].as_object_mut().unwrap().remove(&k);
            v["ignored_query_params"] = json!([k]);
        });
        add("query-ignored-pattern", None, &|v| {
            v["expected"]["query_params"] = json!({});
            v["ignored_query_params_patterns"] = json!([".*"]);
        });
    }
    if t.site == "gitlab" && t.family == 9 {
        add("date-other-form", Some(true), &|v| v["expected"]["post_data"]["due_date"] = json!("January 10, 2027"));
        add("date-wrong", Some(false), &|v| v["expected"]["post_data"]["due_date"] = json!("2027-01-11"));
    }
    if t.site == "magento" && t.family == 7 {
        add("price-within-a-dime", Some(true), &|v| v["expected"]["post_data"]["price"] = json!("$122.05"));
        add("price-off", Some(false), &|v| v["expected"]["post_data"]["price"] = json!("$125.00"));
    }
    out
}

/// Runs the fixture tasks of [`recorded_tasks`] with `skillshift local` (the `skills` agent, real
/// Chromium, the network trace on) and returns, per task, its trajectory's `network` part and the
/// origin its site was served at.
fn record_attempts(dir: &Path) -> BTreeMap<(String, u32), (Value, String)> {
    let mut sites: BTreeMap<&str, Vec<u32>> = BTreeMap::new();
    for t in recorded_tasks() {
        sites.entry(t.site).or_default().push(t.family);
    }
    let families =
        json!({"sites": sites.iter().map(|(s, f)| (s.to_string(), json!({"families": f}))).collect::<Map<_, _>>()});
    let families_file = dir.join("families.json");
    std::fs::write(&families_file, families.to_string()).unwrap();
    let out = dir.join("recorded");
    let run = cli::bin()
        .args(["local", "--workers", "1", "--conditions", "src", "--screenshots", "none", "--families"])
        .arg(&families_file)
        .arg("--out")
        .arg(&out)
        .current_dir(root())
        .output()
        .unwrap();
    assert!(run.status.success(), "local failed: {}", String::from_utf8_lossy(&run.stderr));
    let mut traces = BTreeMap::new();
    for line in std::fs::read_to_string(out.join("per_task.jsonl")).unwrap().lines() {
        let record: Value = serde_json::from_str(line).unwrap();
        assert_eq!(record["outcome"], "success", "the recorded attempts do what their tasks ask: {record}");
        let t: Value =
            serde_json::from_str(&std::fs::read_to_string(out.join(record["trajectory"].as_str().unwrap())).unwrap())
                .unwrap();
        let start = t["start_url"].as_str().unwrap();
        let origin = start.splitn(4, '/').take(3).collect::<Vec<_>>().join("/");
        let uid = record["uid"].as_str().unwrap();
        let mut parts = uid.split('.');
        let (site, family) = (parts.nth(1).unwrap().to_string(), parts.nth(1).unwrap().parse().unwrap());
        assert!(t["network"]["log"]["entries"].as_array().is_some_and(|e| !e.is_empty()), "{uid} has a trace");
        traces.insert((site, family), (t["network"].clone(), origin));
    }
    traces
}

/// Traces recorded from real attempts in Chromium on the fixture sites, scored by the package's
/// `NetworkEventEvaluator` and ours with evaluators written for those tasks and their variants.
/// One case on a recorded trace: the task (by id in the written file), the response, the HAR, the
/// sites, and whether the package should pass it (`None`: either way).
struct RecordedCase {
    id: String,
    task_id: u32,
    response: String,
    har: PathBuf,
    sites: Map<String, Value>,
    pass: Option<bool>,
}

#[test]
fn recorded_traces_score_as_the_package_scores() {
    let Some(python) = oracle_python() else { return };
    let dir = tempfile::tempdir().unwrap();
    let traces = record_attempts(dir.path());
    let tasks = recorded_tasks();
    assert_eq!(traces.len(), tasks.len(), "one recorded attempt per task");

    // One WebArena-Verified task per (fixture task, variant); each scored on its own trace, and the gold
    // one also on every other recorded trace (where its request is missing).
    let mut task_objects = Vec::new();
    let mut cases: Vec<RecordedCase> = Vec::new();
    for t in &tasks {
        let (_, origin) = &traces[&(t.site.to_string(), t.family)];
        let (key, _) = key_of(t.site);
        let base = if key == "shopping_admin" { format!("{origin}/admin") } else { origin.clone() };
        let har_of = |site: &str, family: u32| {
            let path = dir.path().join(format!("{site}.{family}.har"));
            if !path.exists() {
                std::fs::write(&path, traces[&(site.to_string(), family)].0.to_string()).unwrap();
            }
            path
        };
        let own_har = har_of(t.site, t.family);
        let response =
            |status: &str| json!({"task_type": t.task_type, "status": status, "retrieved_data": null}).to_string();
        for (variant, evaluator, pass) in network_variants(t, &base) {
            let id = task_objects.len() as u32;
            let name = format!("{}.{}/{variant}", t.site, t.family);
            task_objects.push(json!({"sites": [key], "task_id": id, "intent_template_id": id, "start_urls": [format!("{}/", key_of(t.site).1)],
                "intent": name, "intent_template": name, "instantiation_dict": {}, "revision": 1,
                "eval": [{"evaluator": "AgentResponseEvaluator", "results_schema": {"type": "null"},
                          "expected": {"task_type": t.task_type.to_lowercase(), "status": "SUCCESS", "retrieved_data": null}},
                         evaluator]}));
            let sites: Map<String, Value> = [(key.to_string(), json!(base))].into_iter().collect();
            let task_id = id;
            let case = |id: String, response: String, har: &PathBuf, pass| RecordedCase {
                id,
                task_id,
                response,
                har: har.clone(),
                sites: sites.clone(),
                pass,
            };
            cases.push(case(format!("{name}/gold-response"), response("SUCCESS"), &own_har, pass));
            cases.push(case(format!("{name}/wrong-response"), response("NOT_FOUND_ERROR"), &own_har, Some(false)));
            if variant == "gold" {
                for other in tasks.iter().filter(|o| (o.site, o.family) != (t.site, t.family)) {
                    let other_har = har_of(other.site, other.family);
                    let pass = if other.site == t.site { None } else { Some(false) };
                    let on = format!("{name}/on-{}.{}", other.site, other.family);
                    cases.push(case(on, response("SUCCESS"), &other_har, pass));
                }
            }
        }
    }
    let task_file = dir.path().join("recorded-tasks.json");
    std::fs::write(&task_file, Value::Array(task_objects).to_string()).unwrap();
    let report = validate_file(&task_file).unwrap();
    assert_eq!(report.tasks, report.loaded, "{:?}", report.problems.first());
    let loaded: BTreeMap<u32, Task> = report.into_tasks().into_iter().map(|t| (t.task_id, t)).collect();

    let input: Vec<Value> = cases
        .iter()
        .map(|c| {
            json!({"id": c.id, "task_file": task_file, "task_id": c.task_id, "response": c.response, "har": c.har,
                   "sites": c.sites})
        })
        .collect();
    let theirs = package_verdicts(&python, &input);
    assert_eq!(theirs.len(), cases.len());

    let mut disagreements = Vec::new();
    let mut wrong_expectations = Vec::new();
    let mut statuses: BTreeMap<String, usize> = BTreeMap::new();
    let mut by_variant: BTreeMap<(String, String), usize> = BTreeMap::new();
    for (c, t) in cases.iter().zip(&theirs) {
        let id = &c.id;
        let har: Har = serde_json::from_str(&std::fs::read_to_string(&c.har).unwrap()).unwrap();
        let mut bases = SiteBases::default();
        for (k, u) in &c.sites {
            bases.insert(k.parse().unwrap(), u.as_str().unwrap());
        }
        let ours = evaluate_verified(&loaded[&c.task_id], &c.response, &har, &bases);
        let mut mine = vec![status_word(&ours.status).to_string()];
        mine.extend(ours.evaluators.iter().map(|e| status_word(&e.status).to_string()));
        let mut package = vec![t["status"].as_str().unwrap_or("?").to_string()];
        package.extend(
            t["evaluators"].as_array().unwrap().iter().map(|e| e["status"].as_str().unwrap_or("?").to_string()),
        );
        *statuses.entry(package[0].clone()).or_default() += 1;
        let variant = id.split('/').nth(1).unwrap_or("?").to_string();
        *by_variant.entry((variant, package[0].clone())).or_default() += 1;
        if mine != package {
            let why: Vec<&String> = ours.evaluators.iter().flat_map(|e| e.messages.iter().take(2)).collect();
            disagreements.push(format!("{id}: ours {mine:?}, package {package:?}; ours say {why:?}; package {t}"));
        }
        if let Some(p) = c.pass {
            if (package[0] == "success") != p {
                wrong_expectations.push(format!("{id}: the package says {package:?}, the test expected pass {p}: {t}"));
            }
        }
    }

    // `skillshift score` reads an exported trajectory's network part as the HAR it is.
    for c in cases.iter().filter(|c| c.id.ends_with("/gold/gold-response")).take(3) {
        let mut cmd = cli::bin();
        cmd.arg("score").arg(&task_file).args([
            "--task",
            &c.task_id.to_string(),
            "--evaluator",
            "webarena-verified",
            "--json",
        ]);
        cmd.arg("--network").arg(&c.har).arg("--response").arg(&c.response);
        for (k, u) in &c.sites {
            cmd.args(["--site", &format!("{k}={}", u.as_str().unwrap())]);
        }
        let out = cmd.output().unwrap();
        assert_eq!(out.status.code(), Some(0), "{}: {}", c.id, String::from_utf8_lossy(&out.stderr));
        let printed: Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(printed["verdict"], "pass", "{}: {printed}", c.id);
    }

    eprintln!(
        "recorded-trace cases: {} on {} recorded traces; package statuses {statuses:?}",
        cases.len(),
        traces.len()
    );
    eprintln!("package statuses by variant: {by_variant:?}");
    for d in &disagreements {
        eprintln!("DISAGREE {d}");
    }
    eprintln!("disagreements: {} (documented: {DOCUMENTED_RECORDED_DEPARTURES})", disagreements.len());
    assert!(
        wrong_expectations.is_empty(),
        "the evaluators written for the fixture tasks do not judge as meant:\n{}",
        wrong_expectations.join("\n")
    );
    assert!(cases.len() >= 150, "too few cases: {}", cases.len());
    assert!(
        statuses.get("success").copied().unwrap_or(0) >= 30 && statuses.get("failure").copied().unwrap_or(0) >= 30,
        "{statuses:?}"
    );
    assert!(
        disagreements.len().saturating_sub(DOCUMENTED_RECORDED_DEPARTURES) == 0,
        "{} disagreements with webarena-verified on recorded traces, {DOCUMENTED_RECORDED_DEPARTURES} documented",
        disagreements.len()
    );
}
