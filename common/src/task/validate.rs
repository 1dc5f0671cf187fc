//! `tasks validate FILE...`: which tasks of a WebArena config file load,
//! and, for each that does not, the field and the reason.
//!
//! A task is refused when its JSON does not have the shape of a config
//! (unknown or missing fields, wrong types, an unknown site or evaluator),
//! or when WebArena's evaluator could not score it: `string_match` without
//! `reference_answers`, `url_match` without `reference_url` or with a
//! `url_note` other than `"GOLD in PRED"`, a `program_html` check whose URL,
//! locator or `required_contents` WebArena does not know, or a URL naming a
//! placeholder no site has. Everything WebArena itself accepts loads.

use std::path::Path;

use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::Value;

use super::site::{placeholders_in, SiteKey};
use super::verified;
use super::GOLD_IN_PRED;
use super::{EvalType, Task, TaskFileError};

/// The report of `tasks validate --json`.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Report {
    pub files: Vec<FileReport>,
}

impl Report {
    /// Every task of every file loaded.
    pub fn all_loaded(&self) -> bool {
        self.files.iter().all(|f| f.problems.is_empty() && f.loaded == f.tasks)
    }
}

/// One file: how many tasks it holds, how many loaded, and the problems.
#[derive(Debug, Clone, Default, Serialize)]
pub struct FileReport {
    pub path: String,
    pub tasks: usize,
    pub loaded: usize,
    pub problems: Vec<Problem>,
    #[serde(skip)]
    loaded_tasks: Vec<Task>,
}

impl FileReport {
    /// The tasks that loaded, in file order.
    pub fn tasks(&self) -> &[Task] {
        &self.loaded_tasks
    }

    /// The tasks that loaded, in file order.
    pub fn into_tasks(self) -> Vec<Task> {
        self.loaded_tasks
    }
}

/// One reason a task was refused.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Problem {
    /// The task's own `task_id` when it has a readable one.
    pub task_id: Option<i64>,
    /// The field, as a path: `eval.program_html[2].locator`.
    pub field: String,
    pub message: String,
    /// The task's position in the file.
    #[serde(skip)]
    pub index: usize,
}

/// Validates each file; a file that cannot be read or is not JSON is an `Err` beside the report.
pub fn validate_files(paths: &[impl AsRef<Path>]) -> (Report, Vec<TaskFileError>) {
    let mut report = Report::default();
    let mut errors = Vec::new();
    for p in paths {
        match validate_file(p.as_ref()) {
            Ok(f) => report.files.push(f),
            Err(e) => errors.push(e),
        }
    }
    (report, errors)
}

/// Validates one file: a task object or an array of them.
pub fn validate_file(path: &Path) -> Result<FileReport, TaskFileError> {
    let shown = path.display().to_string();
    let text = crate::bounded::read_to_string(path, crate::bounded::MAX_FILE_BYTES)
        .map_err(|source| TaskFileError::Io { path: shown.clone(), source })?;
    let value: Value =
        serde_json::from_str(&text).map_err(|source| TaskFileError::Json { path: shown.clone(), source })?;
    Ok(validate_value(&shown, &value))
}

/// Validates parsed JSON (a task object or an array of them).
pub fn validate_value(path: &str, value: &Value) -> FileReport {
    let mut report = FileReport { path: path.to_string(), ..FileReport::default() };
    let items: Vec<&Value> = match value {
        Value::Array(items) => items.iter().collect(),
        Value::Object(_) => vec![value],
        other => {
            report.problems.push(Problem {
                task_id: None,
                field: String::new(),
                message: format!("the file holds {}, not a task object or an array of them", kind(other)),
                index: 0,
            });
            return report;
        }
    };
    report.tasks = items.len();
    for (index, item) in items.into_iter().enumerate() {
        match check_task(item) {
            Ok(task) => {
                report.loaded += 1;
                report.loaded_tasks.push(task);
            }
            Err(problems) => {
                let task_id = item.get("task_id").and_then(Value::as_i64);
                report.problems.extend(problems.into_iter().map(|(field, message)| Problem {
                    task_id,
                    field,
                    message,
                    index,
                }));
            }
        }
    }
    report
}

fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

type Found = Vec<(String, String)>;
type Check = fn(&Value, &str, &mut Found);

/// A field a JSON object may hold, whether it must, and how its value is checked.
struct Field {
    name: &'static str,
    required: bool,
    check: Check,
}

const fn req(name: &'static str, check: Check) -> Field {
    Field { name, required: true, check }
}

const fn opt(name: &'static str, check: Check) -> Field {
    Field { name, required: false, check }
}

fn leaf<T: DeserializeOwned>(v: &Value, path: &str, out: &mut Found) {
    if let Err(e) = serde_json::from_value::<T>(v.clone()) {
        out.push((path.to_string(), e.to_string()));
    }
}

fn object(v: &Value, path: &str, fields: &[Field], out: &mut Found) {
    let Value::Object(map) = v else {
        out.push((path.to_string(), format!("is {}, expected an object", kind(v))));
        return;
    };
    let at = |name: &str| if path.is_empty() { name.to_string() } else { format!("{path}.{name}") };
    for key in map.keys() {
        if !fields.iter().any(|f| f.name == key) {
            let known: Vec<&str> = fields.iter().map(|f| f.name).collect();
            out.push((
                at(key),
                format!("is not a field WebArena's configs have (expected one of {})", known.join(", ")),
            ));
        }
    }
    for f in fields {
        match map.get(f.name) {
            Some(value) => (f.check)(value, &at(f.name), out),
            None if f.required => out.push((at(f.name), "is missing".to_string())),
            None => {}
        }
    }
}

const TASK: &[Field] = &[
    req("task_id", leaf::<u32>),
    req("sites", leaf::<Vec<SiteKey>>),
    req("require_login", leaf::<bool>),
    req("storage_state", leaf::<Option<String>>),
    req("start_url", leaf::<String>),
    req("geolocation", leaf::<Option<Value>>),
    req("intent_template", leaf::<String>),
    req("instantiation_dict", leaf::<std::collections::BTreeMap<String, Value>>),
    req("intent", leaf::<String>),
    req("intent_template_id", leaf::<u32>),
    req("require_reset", leaf::<bool>),
    req("eval", |v, p, o| object(v, p, EVAL, o)),
    opt("string_note", leaf::<Option<String>>),
];

const EVAL: &[Field] = &[
    req("eval_types", leaf::<Vec<EvalType>>),
    opt("reference_answers", |v, p, o| {
        if !v.is_null() {
            object(v, p, REFERENCE_ANSWERS, o)
        }
    }),
    opt("reference_url", leaf::<Option<String>>),
    opt("program_html", |v, p, o| match v {
        Value::Array(items) => {
            for (i, item) in items.iter().enumerate() {
                object(item, &format!("{p}[{i}]"), PROGRAM_HTML, o);
            }
        }
        other => o.push((p.to_string(), format!("is {}, expected an array", kind(other)))),
    }),
    opt("url_note", leaf::<Option<String>>),
    opt("string_note", leaf::<Option<String>>),
    opt("reference_answer_raw_annotation", leaf::<Option<String>>),
    opt("annotation_note", leaf::<Option<String>>),
    opt("verified", leaf::<Option<verified::Verified>>),
];

const REFERENCE_ANSWERS: &[Field] = &[
    opt("exact_match", leaf::<String>),
    opt("must_include", leaf::<Vec<String>>),
    opt("fuzzy_match", leaf::<super::FuzzyMatch>),
];

const PROGRAM_HTML: &[Field] = &[
    req("url", leaf::<String>),
    req("locator", leaf::<String>),
    req("required_contents", |v, p, o| object(v, p, REQUIRED_CONTENTS, o)),
    opt("prep_actions", leaf::<Vec<String>>),
];

const REQUIRED_CONTENTS: &[Field] = &[opt("exact_match", leaf::<String>), opt("must_include", leaf::<Vec<String>>)];

/// The task, or every (field, message) that refuses it.
pub fn check_task(v: &Value) -> Result<Task, Found> {
    if verified::is_verified_task(v) {
        let task = verified::task_from_value(v)?;
        let mut found = Found::new();
        scoreable(&task, &mut found);
        return if found.is_empty() { Ok(task) } else { Err(found) };
    }
    let mut found = Found::new();
    object(v, "", TASK, &mut found);
    if !found.is_empty() {
        return Err(found);
    }
    let task: Task = serde_json::from_value(v.clone()).map_err(|e| vec![(String::new(), e.to_string())])?;
    scoreable(&task, &mut found);
    if found.is_empty() {
        Ok(task)
    } else {
        Err(found)
    }
}

/// What WebArena's evaluator needs to score the task.
fn scoreable(t: &Task, out: &mut Found) {
    let e = &t.eval;
    if e.eval_types.contains(&EvalType::StringMatch) && e.reference_answers.is_none() {
        out.push(("eval.reference_answers".into(), "is null, but eval_types has string_match".into()));
    }
    if e.eval_types.contains(&EvalType::UrlMatch) {
        if e.reference_url.is_none() {
            out.push(("eval.reference_url".into(), "is null, but eval_types has url_match".into()));
        }
        if let Some(note) = e.url_note.as_deref().filter(|n| *n != GOLD_IN_PRED) {
            out.push(("eval.url_note".into(), format!("is {note:?}; WebArena knows only \"{GOLD_IN_PRED}\"")));
        }
    }
    if e.eval_types.contains(&EvalType::ProgramHtml) {
        for (i, check) in e.program_html.iter().enumerate() {
            let at = |f: &str| format!("eval.program_html[{i}].{f}");
            if let Err(m) = check.url.class() {
                out.push((at("url"), m.to_string()));
            }
            if let Err(m) = check.locator.class() {
                out.push((at("locator"), m.to_string()));
            }
            let c = &check.required_contents;
            if c.exact_match.is_none() && c.must_include.is_none() {
                out.push((at("required_contents"), "sets neither exact_match nor must_include".into()));
            }
        }
    }
    let mut urls: Vec<(String, &str)> = vec![("start_url".into(), t.start_url.as_str())];
    if let Some(u) = &e.reference_url {
        urls.push(("eval.reference_url".into(), u));
    }
    for (i, check) in e.program_html.iter().enumerate() {
        urls.push((format!("eval.program_html[{i}].url"), check.url.as_str()));
    }
    let verified_urls = e.verified.as_ref().map(|v| verified::urls_of(&v.evaluators)).unwrap_or_default();
    for (field, url) in &verified_urls {
        urls.push((field.clone(), url));
    }
    for (field, url) in urls {
        for p in placeholders_in(url) {
            if SiteKey::of_placeholder(&p).is_none() {
                out.push((field.clone(), format!("names the placeholder {p}, which no site has")));
            }
        }
        if let Err(m) = web_scheme(url) {
            out.push((field, m.to_string()));
        }
    }
}

/// A URL of a scheme other than the web's, in a task's URL field.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("is a {scheme}: URL ({part:?}); only http(s) URLs and site placeholders are allowed")]
pub struct SchemeError {
    /// Lowercased, without its colon.
    pub scheme: String,
    pub part: String,
}

/// Whether every URL in `field` (parts joined by ` |AND| ` or ` |OR| `) is a page of
/// the web: a site placeholder, a path, `func:`/`last` (program_html's own forms), or
/// an `http(s):` URL. `file:`, `data:`, `chrome:`, `javascript:`... would let a task
/// read the worker's machine or run script, so they are refused.
pub fn web_scheme(field: &str) -> Result<(), SchemeError> {
    for part in field.split(" |AND| ").flat_map(|p| p.split(" |OR| ")) {
        let part = part.trim();
        if part.is_empty() || part == "last" || part.starts_with("func:") || part.starts_with("__") {
            continue;
        }
        let Some(colon) = part.find(':') else { continue };
        let scheme = &part[..colon];
        let is_scheme = scheme.chars().next().is_some_and(|c| c.is_ascii_alphabetic())
            && scheme.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'));
        // `a/b:c` or `?q=x:y` has no scheme: the colon comes after a path or a query.
        if !is_scheme {
            continue;
        }
        let lower = scheme.to_ascii_lowercase();
        if lower != "http" && lower != "https" {
            return Err(SchemeError { scheme: lower, part: part.to_string() });
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn webarena_task() -> Value {
        json!({
            "sites": ["shopping_admin", "map"], "task_id": 41, "require_login": true,
            "storage_state": "./.auth/shopping_admin_state.json",
            "start_url": "__SHOPPING_ADMIN__ |AND| __MAP__", "geolocation": null,
            "intent_template": "t", "instantiation_dict": {"n": 3}, "intent": "i", "require_reset": false,
            "eval": {"eval_types": ["string_match", "program_html"], "reference_answers": {"fuzzy_match": "N/A"},
                     "reference_url": "", "program_html": [{"url": "func:shopping_get_latest_order_url()",
                     "locator": "document.querySelector('.x').outerText", "required_contents": {"must_include": ["a |OR| b"]},
                     "prep_actions": ["document.querySelector('.y').click()"]}],
                     "string_note": "no such order", "reference_answer_raw_annotation": "N/A", "url_note": "GOLD in PRED"},
            "intent_template_id": 7
        })
    }

    #[test]
    fn a_webarena_task_loads_with_every_construct() {
        let r = validate_value("x.json", &webarena_task());
        assert_eq!((r.tasks, r.loaded), (1, 1), "{:?}", r.problems);
        let t = &r.into_tasks()[0];
        assert_eq!(t.sites, [SiteKey::ShoppingAdmin, SiteKey::Map]);
        assert_eq!(t.start_urls(), ["__SHOPPING_ADMIN__", "__MAP__"]);
    }

    #[test]
    fn problems_name_the_task_and_the_field() {
        let mut bad = webarena_task();
        bad["eval"]["program_html"][0]["locator"] = json!("window.x");
        bad["eval"]["bogus"] = json!(1);
        bad["sites"] = json!(["misc"]);
        let mut unscoreable = webarena_task();
        unscoreable["task_id"] = json!(9);
        unscoreable["eval"]["reference_answers"] = Value::Null;
        unscoreable["start_url"] = json!("__NOWHERE__/x");
        let r = validate_value("x.json", &json!([webarena_task(), bad, unscoreable]));
        assert_eq!((r.tasks, r.loaded), (3, 1));
        let fields: Vec<(Option<i64>, &str)> = r.problems.iter().map(|p| (p.task_id, p.field.as_str())).collect();
        assert!(fields.contains(&(Some(41), "sites")), "{fields:?}");
        assert!(fields.contains(&(Some(41), "eval.bogus")), "{fields:?}");
        assert!(fields.contains(&(Some(9), "eval.reference_answers")), "{fields:?}");
        assert!(fields.contains(&(Some(9), "start_url")), "{fields:?}");
        // The unknown locator is reported once the shape is right.
        let mut only_locator = webarena_task();
        only_locator["eval"]["program_html"][0]["locator"] = json!("window.x");
        let r = validate_value("x.json", &only_locator);
        assert_eq!(r.problems[0].field, "eval.program_html[0].locator");
    }

    #[test]
    fn local_file_data_and_browser_urls_are_refused_naming_the_task_and_field() {
        let mut file = webarena_task();
        file["start_url"] = json!("file:///etc/passwd");
        let mut check = webarena_task();
        check["task_id"] = json!(42);
        check["eval"]["program_html"][0]["url"] = json!("FILE:///etc/hostname");
        let mut data = webarena_task();
        data["task_id"] = json!(43);
        data["start_url"] = json!("__SHOPPING_ADMIN__ |AND| data:text/html,<b>x</b>");
        let mut chrome = webarena_task();
        chrome["task_id"] = json!(44);
        chrome["eval"]["eval_types"] = json!(["url_match"]);
        chrome["eval"]["reference_url"] = json!("__GITLAB__/a |OR| chrome://settings");
        let mut fine = webarena_task();
        fine["task_id"] = json!(45);
        fine["start_url"] = json!("http://localhost:7780/admin?x=a:b |AND| __MAP__/search:1");
        let r = validate_value("x.json", &json!([file, check, data, chrome, fine]));
        let found: Vec<(Option<i64>, &str, &str)> =
            r.problems.iter().map(|p| (p.task_id, p.field.as_str(), p.message.as_str())).collect();
        assert_eq!((r.tasks, r.loaded), (5, 1), "{found:?}");
        assert_eq!(found[0].0, Some(41));
        assert_eq!(found[0].1, "start_url");
        assert!(found[0].2.starts_with("is a file: URL"), "{found:?}");
        assert_eq!((found[1].0, found[1].1), (Some(42), "eval.program_html[0].url"));
        assert_eq!((found[2].0, found[2].1), (Some(43), "start_url"));
        assert!(found[2].2.starts_with("is a data: URL"), "{found:?}");
        assert_eq!((found[3].0, found[3].1), (Some(44), "eval.reference_url"));
    }

    #[test]
    fn webarena_verified_tasks_load_beside_webarena_ones_and_their_model_loads_back() {
        let verified = json!({"sites": ["__REDDIT__"], "task_id": 400, "intent_template_id": 1, "start_urls": ["__REDDIT__"],
            "intent": "Change my bio", "intent_template": "Change my bio", "instantiation_dict": {}, "revision": 1,
            "eval": [{"evaluator": "AgentResponseEvaluator", "results_schema": {"type": "null"},
                      "expected": {"task_type": "mutate", "status": "SUCCESS", "retrieved_data": null}},
                     {"evaluator": "NetworkEventEvaluator", "last_event_only": false,
                      "expected": {"url": "__NOWHERE__/edit_biography", "http_method": "POST", "response_status": 302}}]});
        let r = validate_value("x.json", &json!([webarena_task(), verified.clone()]));
        assert_eq!((r.tasks, r.loaded), (2, 1));
        assert_eq!(r.problems[0].task_id, Some(400));
        assert_eq!(r.problems[0].field, "eval[1].expected.url");
        let mut fixed = verified;
        fixed["eval"][1]["expected"]["url"] = json!("__REDDIT__/user/x/edit_biography");
        let t = check_task(&fixed).unwrap();
        assert_eq!((t.sites.as_slice(), t.require_reset), (&[SiteKey::Reddit][..], true));
        // The task model, written out, is a WebArena-shaped config that loads back unchanged.
        let again = check_task(&serde_json::to_value(&t).unwrap()).unwrap();
        assert_eq!(again, t);
    }

    #[test]
    fn a_device_is_read_up_to_the_bound_and_refused() {
        let e = validate_file(Path::new("/dev/zero")).expect_err("/dev/zero is no task file");
        let line = e.to_string();
        assert!(line.starts_with("/dev/zero: larger than 67108864 bytes (64 MiB)"), "{line}");
    }

    #[test]
    fn a_file_url_is_refused_in_the_words_it_was() {
        let e = web_scheme("__GITLAB__/a |OR| FILE:///etc/passwd").unwrap_err();
        assert_eq!(e.scheme, "file");
        assert_eq!(
            e.to_string(),
            "is a file: URL (\"FILE:///etc/passwd\"); only http(s) URLs and site placeholders are allowed"
        );
        assert!(web_scheme("https://x/a:b |AND| last |AND| func:f() |AND| a/b:c").is_ok());
    }
}
