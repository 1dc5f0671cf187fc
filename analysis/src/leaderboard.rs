//! Leaderboard admission and rendering (docs/formats.md#leaderboard).
//!
//! An entry is a summary (`skillshift.summary/1`), computed from a run or
//! transcribed from a paper. [`validate`] checks it as untyped JSON so that
//! every refusal can name its rule and the offending value, and a malformed
//! entry is refused rather than failing to parse. An entry names its method,
//! is never built from simulated records, and holds no key outside the
//! summary's schema ([`crate::schema`]): per-task records, trajectories and
//! other per-task judgements stay on the machine that ran them
//! (docs/results-policy.md). [`render`] writes one
//! static page of admitted entries, sorted by SR and sortable by SR, AS and
//! ASC (never SFR).

use serde_json::{Map, Value};

use crate::schema::{self, Violation};
use crate::style::{FLAG, LOW_INVOCATIONS, STYLE};
use crate::summary::{METRICS, SCHEMA};
use skillshift_common::html::escape;
use skillshift_common::ids::{Condition, Site};

/// Tolerance of the identity mean(3 websites) == mean(6 conditions) == overall.
pub const IDENTITY_TOLERANCE: f64 = 0.01;

/// The site names, in table order, as an entry's keys spell them.
fn sites() -> impl Iterator<Item = &'static str> {
    Site::ALL.iter().map(|s| s.as_str())
}

/// The condition names, in table order, as an entry's keys spell them.
fn conditions() -> impl Iterator<Item = &'static str> {
    Condition::ALL.iter().map(|c| c.as_str())
}

/// One reason an entry is refused.
#[derive(Debug, Clone, PartialEq)]
pub struct Refusal {
    pub rule: &'static str,
    pub detail: String,
}

impl std::fmt::Display for Refusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.rule, self.detail)
    }
}

/// A metric's values as (key, value) pairs: `SR.websites.gitlab` etc.
/// `None` for the metric means it is null as a whole.
fn ten(metrics: &Map<String, Value>, m: &str) -> Option<Vec<(String, Value)>> {
    let obj = metrics.get(m)?.as_object()?;
    let mut out = Vec::with_capacity(10);
    for s in sites() {
        let v = obj.get("websites").and_then(|w| w.get(s)).cloned().unwrap_or(Value::Null);
        out.push((format!("{m}.websites.{s}"), v));
    }
    for c in conditions() {
        let v = obj.get("conditions").and_then(|w| w.get(c)).cloned().unwrap_or(Value::Null);
        out.push((format!("{m}.conditions.{c}"), v));
    }
    out.push((format!("{m}.overall"), obj.get("overall").cloned().unwrap_or(Value::Null)));
    Some(out)
}

fn fmt(v: &Value) -> String {
    match v.as_f64() {
        Some(x) => format!("{x}"),
        None => v.to_string(),
    }
}

/// The sum of counts, checked: `None` when one is not a non-negative integer,
/// `Some(None)` when the sum overflows (it must never wrap into agreement).
fn count_sum(values: impl IntoIterator<Item = Option<u64>>) -> Option<Option<u64>> {
    let mut total = Some(0u64);
    for v in values {
        let v = v?;
        total = total.and_then(|t| t.checked_add(v));
    }
    Some(total)
}

/// What per-task identifier `text` holds, if any: a task uid (`skillshift.gitlab.v2.81`) or a
/// trajectory path (`trajectories/...`), wherever in the text they sit.
fn per_task_identifier(text: &str) -> Option<&'static str> {
    let pieces = text.split(|c: char| !(c.is_ascii_alphanumeric() || "._-/\\".contains(c)));
    for piece in pieces.filter(|p| !p.is_empty()) {
        let is_path = piece.contains(['/', '\\']);
        if is_path && piece.split(['/', '\\']).any(|seg| seg == "trajectories") {
            return Some("a trajectory path");
        }
        for seg in piece.split(['/', '\\']) {
            let mut from = 0;
            while let Some(at) = seg[from..].find("skillshift.") {
                let rest = &seg[from + at..];
                let mut parts = rest.splitn(4, '.').skip(1);
                let site = parts.next().is_some_and(|s| sites().any(|x| x == s));
                let version = parts.next().is_some_and(|v| v == "v1" || v == "v2");
                let id = parts.next().is_some_and(|t| t.chars().next().is_some_and(|c| c.is_ascii_digit()));
                if site && version && id {
                    return Some("a task uid");
                }
                from += at + "skillshift.".len();
            }
        }
    }
    None
}

/// Refuses every per-task identifier anywhere in `v` (keys and string values), naming the field:
/// an entry is an aggregate, and a uid or trajectory path in it is a per-task judgement published
/// (docs/results-policy.md).
fn per_task(v: &Value, path: &str, out: &mut Vec<Refusal>) {
    let what = |p: &str| if p.is_empty() { "the entry".to_string() } else { p.to_string() };
    match v {
        Value::String(s) => {
            if let Some(kind) = per_task_identifier(s) {
                out.push(Refusal {
                    rule: "per-task",
                    detail: format!(
                        "{} holds {kind} ({}): per-task identifiers never travel in an entry (results policy); \
                         drop them (report's failure_categories trajectories are for local use)",
                        what(path),
                        fmt(v)
                    ),
                });
            }
        }
        Value::Array(items) => {
            for (i, x) in items.iter().enumerate() {
                per_task(x, &format!("{path}[{i}]"), out);
            }
        }
        Value::Object(m) => {
            for (k, x) in m {
                let p = if path.is_empty() { k.clone() } else { format!("{path}.{k}") };
                if let Some(kind) = per_task_identifier(k) {
                    out.push(Refusal {
                        rule: "per-task",
                        detail: format!("{p} is a key that is {kind}: per-task identifiers never travel in an entry"),
                    });
                }
                per_task(x, &p, out);
            }
        }
        _ => {}
    }
}

/// Every refusal of one entry; empty when it is admitted.
pub fn validate(entry: &Value) -> Vec<Refusal> {
    let mut out = Vec::new();
    let mut refuse = |rule: &'static str, detail: String| out.push(Refusal { rule, detail });
    let Some(e) = entry.as_object() else {
        refuse("shape", "an entry must be a JSON object".to_string());
        return out;
    };
    match e.get("schema").and_then(Value::as_str) {
        Some(SCHEMA) => {}
        other => refuse(
            "schema",
            format!("schema is {}, expected \"{SCHEMA}\"", other.map_or("missing".into(), |s| format!("\"{s}\""))),
        ),
    }
    match e.get("method") {
        Some(Value::String(m)) if !m.trim().is_empty() => {}
        other => {
            refuse("method", format!("method is {}, expected the method's name", other.map_or("missing".into(), fmt)))
        }
    }
    match e.get("simulated") {
        None | Some(Value::Null) | Some(Value::Bool(false)) => {}
        Some(Value::Bool(true)) => refuse(
            "simulated",
            "simulated is true: the entry was built from records a --simulate worker made up, which measure nothing"
                .to_string(),
        ),
        Some(other) => refuse("simulated", format!("simulated is {}, expected true or false", fmt(other))),
    }
    let mut found = Vec::new();
    per_task(entry, "", &mut found);
    for r in found {
        refuse(r.rule, r.detail);
    }
    let mut violations = Vec::new();
    schema::check(&schema::summary(), entry, "", &mut violations);
    for v in violations {
        match v {
            Violation::UnknownKey { path, allowed } => refuse(
                "unknown-key",
                format!("{path} is not a key of the summary (allowed there: {allowed}); per-task data never travels in an entry"),
            ),
            Violation::Shape { path, expected, found } => {
                refuse("shape", format!("{path} is {found}, expected {expected}"))
            }
        }
    }
    let source = e.get("source").and_then(Value::as_str).unwrap_or("");
    if source != "run" && source != "paper" {
        refuse(
            "source",
            format!("source is {}, expected \"run\" or \"paper\"", e.get("source").map_or("missing".into(), fmt)),
        );
    }
    let empty = Map::new();
    let metrics = e.get("metrics").and_then(Value::as_object).unwrap_or(&empty);
    let reasons = e.get("reasons").and_then(Value::as_object).unwrap_or(&empty);
    let has_reason = |k: &str| reasons.get(k).and_then(Value::as_str).is_some_and(|s| !s.trim().is_empty());

    for m in METRICS {
        let v = metrics.get(m);
        let values = ten(metrics, m);
        // Presence of SR and AS.
        if m == "SR" || m == "AS" {
            match &values {
                None => refuse(
                    "ten-numbers",
                    format!("{m} is {}, its ten numbers are required", v.map_or("missing".into(), fmt)),
                ),
                Some(vals) => {
                    for (k, x) in vals {
                        if !x.is_number() {
                            refuse("ten-numbers", format!("{k} is {}, a number is required", fmt(x)));
                        }
                    }
                }
            }
        }
        match (&values, v) {
            (None, Some(Value::Null)) if m != "SR" && m != "AS" && !has_reason(m) => {
                refuse("reasons", format!("{m} is null without an entry in reasons"))
            }
            (None, None) if m != "SR" && m != "AS" => {
                refuse("shape", format!("metrics.{m} is missing (use null with a reason)"))
            }
            (None, Some(x)) if !x.is_null() => {
                refuse("shape", format!("metrics.{m} is {}, expected an object or null", fmt(x)))
            }
            _ => {}
        }
        let Some(vals) = values else { continue };
        for (k, x) in &vals {
            if x.is_null() {
                if !has_reason(k) && !has_reason(m) {
                    refuse("reasons", format!("{k} is null without an entry in reasons"));
                }
            } else if let Some(n) = x.as_f64() {
                let bad = match m {
                    "SR" | "SFR" => !(0.0..=100.0).contains(&n),
                    _ => n < 0.0,
                };
                if bad {
                    let want = if m == "SR" || m == "SFR" { "in [0, 100]" } else { ">= 0" };
                    refuse("range", format!("{k} is {n}, must be {want}"));
                }
            } else if m != "SR" && m != "AS" {
                refuse("shape", format!("{k} is {}, expected a number or null", fmt(x)));
            }
        }
        // The identity, on every metric but SFR whose ten numbers are all present.
        let nums: Vec<f64> = vals.iter().filter_map(|(_, x)| x.as_f64()).collect();
        if m != "SFR" && nums.len() == 10 {
            let overall = nums[9];
            let web = nums[0..3].iter().sum::<f64>() / 3.0;
            let cond = nums[3..9].iter().sum::<f64>() / 6.0;
            for (what, mean) in [("mean(3 websites)", web), ("mean(6 conditions)", cond)] {
                if (mean - overall).abs() > IDENTITY_TOLERANCE {
                    refuse(
                        "identity",
                        format!(
                            "{m}: {what} = {mean:.4} but overall = {overall} (differ by {:.4} > {IDENTITY_TOLERANCE})",
                            (mean - overall).abs()
                        ),
                    );
                }
            }
        }
    }

    // n.tasks: the full benchmark, every site's task families.
    let n = e.get("n").and_then(Value::as_object).unwrap_or(&empty);
    for (site, want) in Site::ALL.iter().map(|s| (s.as_str(), s.n_tasks() as u64)) {
        let got = n.get("tasks").and_then(|t| t.get(site));
        if got.and_then(Value::as_u64) != Some(want) {
            refuse("n.tasks", format!("n.tasks.{site} is {}, expected {want}", got.map_or("missing".into(), fmt)));
        }
    }
    // n.skill_calls: required of a run entry, and consistent wherever present.
    let calls = n.get("skill_calls").filter(|v| !v.is_null());
    match calls {
        None if source == "run" => refuse("n.skill_calls", "a run entry must carry n.skill_calls".to_string()),
        None => {}
        Some(c) => {
            let sum = |part: &str, keys: &mut dyn Iterator<Item = &'static str>| {
                count_sum(keys.map(|k| c.get(part).and_then(|p| p.get(k)).and_then(Value::as_u64)))
            };
            let (w, k, o) = (
                sum("websites", &mut sites()),
                sum("conditions", &mut conditions()),
                c.get("overall").and_then(Value::as_u64),
            );
            match (w, k, o) {
                (Some(Some(w)), Some(Some(k)), Some(o)) if w == o && k == o => {}
                (Some(Some(w)), Some(Some(k)), Some(o)) => refuse(
                    "n.skill_calls",
                    format!("sum(websites) = {w}, sum(conditions) = {k}, overall = {o}: all three must be equal"),
                ),
                // Reached only when one of the sums overflowed.
                (Some(w), Some(_), Some(_)) => refuse(
                    "n.skill_calls",
                    format!(
                        "sum({}) overflows a 64-bit count: these are not invocation counts",
                        if w.is_none() { "websites" } else { "conditions" }
                    ),
                ),
                _ => refuse(
                    "n.skill_calls",
                    "n.skill_calls must hold non-negative integers for 3 websites, 6 conditions and overall"
                        .to_string(),
                ),
            }
        }
    }
    // SFR = 0 where nothing was invoked would claim that no skill ever failed.
    let no_calls = calls.and_then(|c| c.get("overall")).and_then(Value::as_u64) == Some(0);
    let asc_zero = metrics.get("ASC").and_then(|a| a.get("overall")).and_then(Value::as_f64) == Some(0.0);
    if no_calls || asc_zero {
        if let Some(vals) = ten(metrics, "SFR") {
            for (k, x) in vals {
                if !x.is_null() {
                    let why = if no_calls { "n.skill_calls.overall is 0" } else { "ASC.overall is 0" };
                    refuse("sfr-null", format!("{k} is {} but {why}: SFR must be null", fmt(&x)));
                }
            }
        }
    }
    // Cells of a run entry: every null needs a reason too.
    if let Some(cells) = e.get("cells").and_then(Value::as_object) {
        for s in sites() {
            for c in conditions() {
                let cell = cells.get(s).and_then(|x| x.get(c));
                for m in METRICS {
                    if cell.and_then(|x| x.get(m)).is_some_and(Value::is_null) {
                        let key = format!("{m}.cells.{s}.{c}");
                        if !has_reason(&key) && !has_reason(m) {
                            refuse("reasons", format!("{key} is null without an entry in reasons"));
                        }
                    }
                }
            }
        }
    }
    out
}

/// An admitted entry, ready to render.
#[derive(Debug, Clone)]
pub struct Entry {
    pub file: String,
    pub value: Value,
}

fn overall(v: &Value, m: &str) -> Option<f64> {
    v.get("metrics")?.get(m)?.get("overall")?.as_f64()
}

fn cell_num(v: Option<f64>) -> (String, String) {
    match v {
        Some(x) => (format!("{x:.2}"), format!("{x}")),
        None => ("--".to_string(), String::new()),
    }
}

const SCRIPT: &str = r#"document.querySelectorAll('th[data-sort]').forEach(function(th){th.addEventListener('click',function(){var col=th.cellIndex,tb=th.closest('table').tBodies[0],asc=th.getAttribute('data-dir')==='desc';var rows=Array.prototype.slice.call(tb.rows);rows.sort(function(a,b){var x=a.cells[col].getAttribute('data-v'),y=b.cells[col].getAttribute('data-v');if(x===''&&y==='')return 0;if(x==='')return 1;if(y==='')return -1;return asc?x-y:y-x;});rows.forEach(function(r){tb.appendChild(r);});document.querySelectorAll('th[data-sort]').forEach(function(h){h.removeAttribute('data-dir');});th.setAttribute('data-dir',asc?'asc':'desc');});});"#;

/// The leaderboard page: admitted entries sorted by SR, descending.
pub fn render(entries: &[Entry]) -> String {
    let mut sorted: Vec<&Entry> = entries.iter().collect();
    sorted.sort_by(|a, b| {
        let (x, y) = (overall(&a.value, "SR").unwrap_or(f64::MIN), overall(&b.value, "SR").unwrap_or(f64::MIN));
        y.total_cmp(&x).then_with(|| a.file.cmp(&b.file))
    });
    let mut rows = String::new();
    for e in &sorted {
        let v = &e.value;
        let method = v.get("method").and_then(Value::as_str).unwrap_or("?");
        let source = v.get("source").and_then(Value::as_str).unwrap_or("?");
        let mut tds = format!("<td>{}</td><td>{}</td>", escape(method), escape(source));
        for m in ["SR", "AS", "ASC"] {
            let (text, data) = cell_num(overall(v, m));
            tds.push_str(&format!("<td data-v=\"{data}\">{text}</td>"));
        }
        let sfr = overall(v, "SFR");
        let calls =
            v.get("n").and_then(|n| n.get("skill_calls")).and_then(|c| c.get("overall")).and_then(Value::as_u64);
        tds.push_str(&match (sfr, calls) {
            (None, _) => "<td>--</td>".to_string(),
            (Some(x), Some(n)) if n < LOW_INVOCATIONS => {
                format!("<td title=\"{n} skill invocations\">{x:.2} {FLAG}</td>")
            }
            (Some(x), Some(n)) => format!("<td title=\"{n} skill invocations\">{x:.2}</td>"),
            (Some(x), None) => format!("<td title=\"count unknown\">{x:.2} {FLAG}</td>"),
        });
        for s in sites() {
            let x = v
                .get("metrics")
                .and_then(|m| m.get("SR"))
                .and_then(|m| m.get("websites"))
                .and_then(|w| w.get(s))
                .and_then(Value::as_f64);
            tds.push_str(&format!("<td>{}</td>", cell_num(x).0));
        }
        rows.push_str(&format!("<tr>{tds}</tr>\n"));
    }
    format!(
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>skillshift leaderboard</title>\n\
         <style>{STYLE}th[data-sort]{{cursor:pointer;text-decoration:underline dotted}}</style>\n</head>\n<body>\n\
         <h1>skillshift leaderboard</h1>\n<p>Overall values are unweighted means of the eighteen (website, condition) \
         cells. Sorted by SR; click SR, AS or ASC to sort. SFR is a supplementary diagnostic and not a sort key; \
         {FLAG} marks an SFR value resting on fewer than {LOW_INVOCATIONS} skill invocations (count on hover).</p>\n\
         <table>\n<thead><tr><th>method</th><th>source</th><th data-sort=\"SR\" data-dir=\"desc\">SR</th>\
         <th data-sort=\"AS\">AS</th><th data-sort=\"ASC\">ASC</th><th>SFR</th><th>SR GitLab</th><th>SR Magento</th>\
         <th>SR WordPress</th></tr></thead>\n<tbody>\n{rows}</tbody>\n</table>\n<script>{SCRIPT}</script>\n</body>\n</html>\n"
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn awm() -> Value {
        json!({
            "schema": SCHEMA, "method": "AWM", "source": "paper",
            "metrics": {
                "SR": {"websites": {"gitlab": 17.71, "magento": 25.49, "wordpress": 62.66},
                       "conditions": {"src": 50.07, "src-perc": 43.35, "src-exec": 22.45,
                                      "tgt": 41.28, "tgt-perc": 37.65, "tgt-exec": 16.90},
                       "overall": 35.29},
                "AS": {"websites": {"gitlab": 5.0, "magento": 6.0, "wordpress": 7.0},
                       "conditions": {"src": 6.0, "src-perc": 6.0, "src-exec": 6.0, "tgt": 6.0, "tgt-perc": 6.0, "tgt-exec": 6.0},
                       "overall": 6.0},
                "ASC": null, "SFR": null
            },
            "n": {"tasks": {"gitlab": 162, "magento": 114, "wordpress": 79}, "reps": 1},
            "reasons": {"ASC": "AWM reuses textual workflows", "SFR": "AWM reuses textual workflows"}
        })
    }

    fn rules(v: &Value) -> Vec<&'static str> {
        validate(v).iter().map(|r| r.rule).collect()
    }

    #[test]
    fn a_paper_entry_passes_and_each_rule_refuses() {
        assert_eq!(validate(&awm()), vec![]);
        let mut v = awm();
        v["metrics"]["SR"]["websites"]["gitlab"] = json!(17.17);
        assert_eq!(rules(&v), ["identity"]);
        let mut v = awm();
        v["n"]["tasks"]["wordpress"] = json!(6);
        let r = validate(&v);
        assert_eq!(r[0].to_string(), "n.tasks: n.tasks.wordpress is 6, expected 79");
        let mut v = awm();
        v["reasons"] = json!({});
        assert_eq!(rules(&v), ["reasons", "reasons"]);
        let mut v = awm();
        v["metrics"]["AS"]["overall"] = Value::Null;
        assert!(rules(&v).contains(&"ten-numbers"));
        let mut v = awm();
        v["source"] = json!("run");
        assert_eq!(rules(&v), ["n.skill_calls"]);
    }

    #[test]
    fn skill_call_sums_that_overflow_are_refused() {
        let mut v = awm();
        // u64::MAX + 1 wraps to 0, which would equal the conditions' sum and the overall.
        v["n"]["skill_calls"] = json!({
            "websites": {"gitlab": u64::MAX, "magento": 1, "wordpress": 0},
            "conditions": {"src": 0, "src-perc": 0, "src-exec": 0, "tgt": 0, "tgt-perc": 0, "tgt-exec": 0},
            "overall": 0});
        let r = validate(&v);
        assert!(r.iter().any(|r| r.rule == "n.skill_calls" && r.detail.contains("overflow")), "{r:?}");
    }

    #[test]
    fn simulated_entries_entries_without_a_method_and_extra_keys_are_refused() {
        let mut v = awm();
        v["simulated"] = json!(true);
        let r = validate(&v);
        assert_eq!(rules(&v), ["simulated"]);
        assert!(r[0].to_string().starts_with("simulated: simulated is true"), "{}", r[0]);
        v["simulated"] = json!(false);
        assert_eq!(validate(&v), vec![]);
        let mut v = awm();
        v.as_object_mut().unwrap().remove("method");
        assert_eq!(validate(&v)[0].to_string(), "method: method is missing, expected the method's name");
        v["method"] = json!("");
        assert_eq!(rules(&v), ["method"]);
        let mut v = awm();
        v["records"] = json!([{"uid": "skillshift.gitlab.v1.0", "success": true}]);
        v["n"]["per_task"] = json!({"skillshift.gitlab.v1.0": true});
        let r = validate(&v);
        // The uids are named as per-task identifiers, the keys as outside the schema.
        assert_eq!(rules(&v), ["per-task", "per-task", "unknown-key", "unknown-key"]);
        let r = &r[2..];
        assert!(r[1].detail.starts_with("records is not a key of the summary"), "{}", r[1]);
        assert!(r[0]
            .detail
            .starts_with("n.per_task is not a key of the summary (allowed there: tasks, reps, skill_calls)"));
        // The readiness additions are part of the schema.
        let mut v = awm();
        v["cost"] = json!({"total_usd": null, "per_unit_usd": null, "tokens_in": 10, "tokens_out": 2, "llm_calls": 1});
        v["gates"] = json!({"readiness": "not determined", "missing": [{"name": "x", "metric": "cost.total_usd", "bound": "max"}]});
        v["intervals"] = json!({"level": 0.95, "SR": {"overall": [30.0, 40.0]}});
        assert_eq!(validate(&v), vec![]);
        v["intervals"]["SR"]["overall"] = json!({"task 3": [0, 1]});
        assert_eq!(rules(&v), ["shape"]);
    }

    #[test]
    fn per_task_identifiers_anywhere_are_refused_with_the_field_named() {
        let mut v = awm();
        let path = "trajectories/example/skillshift.gitlab.v2.81.tgt-exec.0.0.json";
        v["failure_categories"] =
            json!({"gitlab": {"tgt-exec": {"wrong_answer": {"count": 3, "trajectories": [path]}}}});
        let r = validate(&v);
        assert_eq!(rules(&v), ["per-task"], "{r:?}");
        assert!(
            r[0].detail
                .starts_with("failure_categories.gitlab.tgt-exec.wrong_answer.trajectories[0] holds a trajectory path"),
            "{}",
            r[0]
        );
        // Counts alone are an aggregate.
        v["failure_categories"]["gitlab"]["tgt-exec"]["wrong_answer"]["trajectories"] = json!([]);
        assert_eq!(validate(&v), vec![]);
        // A uid in free text, and one without its trajectories/ folder.
        let mut v = awm();
        v["metrics"]["ASC"] = Value::Null;
        v["reasons"]["ASC"] = json!("no skills; worst task skillshift.magento.v1.12 under src");
        let r = validate(&v);
        assert_eq!(rules(&v), ["per-task"]);
        assert!(r[0].detail.starts_with("reasons.ASC holds a task uid"), "{}", r[0]);
        let fine =
            ["skillshift.summary/1", "skillshift.gitlab.v3.1", "the skillshift. harness", "gitlab.9", "trajectories"];
        for ok in fine {
            assert_eq!(per_task_identifier(ok), None, "{ok}");
        }
        assert_eq!(per_task_identifier("x/skillshift.wordpress.v2.0.src.0.0.json"), Some("a task uid"));
    }

    #[test]
    fn sfr_zero_without_invocations_is_refused() {
        let mut v = awm();
        let zeros = json!({"websites": {"gitlab": 0.0, "magento": 0.0, "wordpress": 0.0},
            "conditions": {"src": 0.0, "src-perc": 0.0, "src-exec": 0.0, "tgt": 0.0, "tgt-perc": 0.0, "tgt-exec": 0.0},
            "overall": 0.0});
        v["metrics"]["ASC"] = zeros.clone();
        v["metrics"]["SFR"] = zeros;
        let r = validate(&v);
        assert!(r.iter().all(|r| r.rule == "sfr-null") && r.len() == 10, "{r:?}");
        let mut v = awm();
        v["metrics"]["SR"]["overall"] = json!(135.29);
        assert!(rules(&v).contains(&"range"));
    }

    #[test]
    fn page_sorts_by_sr_and_never_offers_sfr_as_a_key() {
        let mut low = awm();
        low["method"] = json!("LOW");
        for k in ["gitlab", "magento", "wordpress"] {
            low["metrics"]["SR"]["websites"][k] = json!(10.0);
        }
        low["metrics"]["SR"]["overall"] = json!(10.0);
        let page = render(&[Entry { file: "a".into(), value: low }, Entry { file: "b".into(), value: awm() }]);
        assert!(page.find(">AWM<").unwrap() < page.find(">LOW<").unwrap());
        assert!(!page.contains("data-sort=\"SFR\""));
        assert!(page.contains("data-sort=\"AS\""));
    }
}
