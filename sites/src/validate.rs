//! `skillshift tasks validate`: checks the shipped (or any) data directory
//! and names the file, the task and the field of every problem:
//! counts and dense ids, placeholders, evaluator fields, v1/v2 family
//! alignment, reference solutions, the example skill library, the image
//! digests and that every calibration-set family resolves.

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};

use skillshift_common::evaluate::check_eval;
use skillshift_common::skills::{placeholders, substitute, SkillLibrary, Step};
use skillshift_common::task::{task_file_path, Task};
use skillshift_common::{Site, Version};

/// One problem: where (file, task, field) and what.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    pub file: String,
    pub task: Option<usize>,
    pub field: String,
    pub message: String,
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.file)?;
        if let Some(t) = self.task {
            write!(f, ": task {t}")?;
        }
        if !self.field.is_empty() {
            write!(f, ": field {}", self.field)?;
        }
        write!(f, ": {}", self.message)
    }
}

/// What a clean validation found.
#[derive(Debug, Clone, Default)]
pub struct Summary {
    /// (site, version, number of tasks) per task file.
    pub files: Vec<(Site, Version, usize)>,
    pub skills: usize,
    pub calibration_families: usize,
}

struct Checker {
    problems: Vec<Problem>,
}

impl Checker {
    fn add(&mut self, file: &Path, task: Option<usize>, field: &str, message: impl Into<String>) {
        self.problems.push(Problem {
            file: file.display().to_string(),
            task,
            field: field.to_string(),
            message: message.into(),
        });
    }
}

/// The calibration rule (docs/formats.md#calibration-set): `index_j = floor(j * n / k)`.
pub fn calibration_rule(n: usize, k: usize) -> Vec<usize> {
    (0..k).map(|j| j * n / k).collect()
}

/// Calibration-set sizes per site (docs/formats.md#calibration-set).
pub fn calibration_k(site: Site) -> usize {
    match site {
        Site::Gitlab => 14,
        Site::Magento => 10,
        Site::Wordpress => 6,
    }
}

fn placeholder_ok(url: &str, site: Site) -> bool {
    url.starts_with(site.placeholder())
}

fn load_tasks(c: &mut Checker, path: &Path, site: Site) -> Option<Vec<Task>> {
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) => {
            c.add(path, None, "", format!("cannot read: {e}"));
            return None;
        }
    };
    let values: Vec<serde_json::Value> = match serde_json::from_str(&text) {
        Ok(v) => v,
        Err(e) => {
            c.add(path, None, "", format!("not a JSON array of tasks: {e}"));
            return None;
        }
    };
    let mut tasks = Vec::new();
    let mut ok = true;
    for (i, value) in values.into_iter().enumerate() {
        match serde_json::from_value::<Task>(value) {
            Ok(t) => tasks.push(t),
            Err(e) => {
                ok = false;
                let msg = e.to_string();
                let field = msg.split('`').nth(1).unwrap_or("").to_string();
                c.add(path, Some(i), &field, msg);
            }
        }
    }
    if !ok {
        return None;
    }
    if tasks.len() != site.n_tasks() {
        c.add(path, None, "", format!("holds {} tasks, expected {}", tasks.len(), site.n_tasks()));
    }
    for (i, t) in tasks.iter().enumerate() {
        check_task(c, path, i, t, site);
    }
    Some(tasks)
}

fn check_task(c: &mut Checker, path: &Path, i: usize, t: &Task, site: Site) {
    if t.task_id as usize != i {
        c.add(path, Some(i), "task_id", format!("is {}, expected {i} (dense ids equal to the index)", t.task_id));
    }
    if t.sites != [site] {
        c.add(path, Some(i), "sites", format!("is {:?}, expected [\"{site}\"]", t.sites));
    }
    if !placeholder_ok(&t.start_url, site) {
        c.add(path, Some(i), "start_url", format!("'{}' does not start with {}", t.start_url, site.placeholder()));
    }
    let args: BTreeMap<String, String> = t
        .instantiation_dict
        .iter()
        .map(|(k, v)| (k.clone(), v.as_str().map(str::to_string).unwrap_or_else(|| v.to_string())))
        .collect();
    let mut wanted: Vec<&str> = placeholders(&t.intent_template);
    wanted.sort();
    wanted.dedup();
    let have: Vec<&str> = args.keys().map(String::as_str).collect();
    if wanted != have {
        c.add(
            path,
            Some(i),
            "instantiation_dict",
            format!("keys {have:?} differ from the placeholders of intent_template {wanted:?}"),
        );
    }
    if t.intent.contains("{{") {
        c.add(path, Some(i), "intent", "holds an unfilled {{placeholder}}");
    } else if substitute(&t.intent_template, &args) != t.intent {
        c.add(path, Some(i), "intent", "is not intent_template filled with instantiation_dict");
    }
    if let Err(e) = check_eval(&t.eval) {
        c.add(path, Some(i), &e.field(), e.to_string());
    }
    if let Some(url) = &t.eval.reference_url {
        for alt in url.split(skillshift_common::evaluate::OR) {
            if !placeholder_ok(alt, site) {
                c.add(
                    path,
                    Some(i),
                    "eval.reference_url",
                    format!("'{alt}' does not start with {}", site.placeholder()),
                );
            }
        }
    }
    for (j, check) in t.eval.program_html.iter().enumerate() {
        if check.url != "last" && !placeholder_ok(check.url.as_str(), site) {
            c.add(
                path,
                Some(i),
                &format!("eval.program_html[{j}].url"),
                format!("'{}' is neither 'last' nor starts with {}", check.url, site.placeholder()),
            );
        }
    }
}

fn check_alignment(c: &mut Checker, path: &Path, v1: &[Task], v2: &[Task]) {
    if v1.len() != v2.len() {
        c.add(path, None, "", format!("has {} tasks but the v1 file has {}", v2.len(), v1.len()));
    }
    for (i, (a, b)) in v1.iter().zip(v2).enumerate() {
        for (field, same) in [
            ("intent_template_id", a.intent_template_id == b.intent_template_id),
            ("intent_template", a.intent_template == b.intent_template),
            ("instantiation_dict", a.instantiation_dict == b.instantiation_dict),
            ("intent", a.intent == b.intent),
            ("eval.eval_types", a.eval.eval_types == b.eval.eval_types),
        ] {
            if !same {
                c.add(path, Some(i), field, "differs from task of the same family in the v1 file");
            }
        }
    }
}

/// A site-version's tasks adapted to a real application (`tasks/real/`, formats.md#real-task-files), when
/// the directory has them: valid tasks, the grid file's tasks one for one but for their `eval`, and real
/// reference solutions for each (`solutions/real/`).
fn check_real(c: &mut Checker, data: &Path, site: Site, version: Version, grid: &[Task]) {
    let path = data.join("tasks").join("real").join(format!("{site}.{version}.json"));
    if !path.exists() {
        return;
    }
    let Some(real) = load_tasks(c, &path, site) else { return };
    for (i, (r, g)) in real.iter().zip(grid).enumerate() {
        if (Task { eval: g.eval.clone(), ..r.clone() }) != *g {
            c.add(&path, Some(i), "", "differs from the grid file's task in more than its eval");
        }
    }
    let solutions = data.join("solutions").join("real").join(format!("{site}.{version}.json"));
    if solutions.exists() {
        check_solutions_at(c, &solutions, site, real.len());
    } else {
        c.add(&path, None, "", format!("has no reference solutions beside it ({})", solutions.display()));
    }
}

fn check_solutions(c: &mut Checker, data: &Path, site: Site, version: Version, n: usize) {
    check_solutions_at(c, &data.join("solutions").join(format!("{site}.{version}.json")), site, n);
}

fn check_solutions_at(c: &mut Checker, path: &Path, site: Site, n: usize) {
    let path = path.to_path_buf();
    let text = match std::fs::read_to_string(&path) {
        Ok(t) => t,
        Err(e) => return c.add(&path, None, "", format!("cannot read: {e}")),
    };
    let solutions: Vec<serde_json::Value> = match serde_json::from_str(&text) {
        Ok(v) => v,
        Err(e) => return c.add(&path, None, "", format!("not a JSON array of step arrays: {e}")),
    };
    if solutions.len() != n {
        c.add(&path, None, "", format!("holds {} solutions, expected {n}", solutions.len()));
    }
    for (i, value) in solutions.into_iter().enumerate() {
        let steps: Vec<Step> = match serde_json::from_value(value) {
            Ok(s) => s,
            Err(e) => {
                c.add(&path, Some(i), "steps", e.to_string());
                continue;
            }
        };
        if steps.is_empty() {
            c.add(&path, Some(i), "steps", "the reference solution is empty");
        }
        for (j, step) in steps.iter().enumerate() {
            if step.texts().iter().any(|t| t.contains("{{")) {
                c.add(&path, Some(i), &format!("steps[{j}]"), "holds an unbound {{placeholder}}");
            }
            if let Step::Goto { url } = step {
                if !placeholder_ok(url, site) {
                    c.add(
                        &path,
                        Some(i),
                        &format!("steps[{j}].url"),
                        format!("'{url}' does not start with {}", site.placeholder()),
                    );
                }
            }
        }
    }
}

fn check_skills(c: &mut Checker, data: &Path, tasks: &BTreeMap<Site, Vec<Task>>) -> usize {
    let path = data.join("skills").join("example.json");
    let library = match SkillLibrary::load(&path) {
        Ok(l) => l,
        Err(e) => {
            c.add(&path, None, "", e.to_string());
            return 0;
        }
    };
    for (site, list) in tasks {
        let mut templates: BTreeMap<&str, &Task> = BTreeMap::new();
        for t in list {
            templates.entry(t.intent_template.as_str()).or_insert(t);
        }
        for (template, t) in templates {
            let skill = library.skills.iter().find(|s| s.site == *site && s.description == template);
            match skill {
                None => c.add(&path, None, "skills", format!("no {site} skill has the description '{template}'")),
                Some(s) => {
                    let keys: Vec<&String> = t.instantiation_dict.keys().collect();
                    let mut params: Vec<&String> = s.params.iter().collect();
                    params.sort();
                    if keys != params {
                        c.add(
                            &path,
                            None,
                            &format!("skills[{}].params", s.name),
                            format!("{params:?} differ from the task keys {keys:?}"),
                        );
                    }
                }
            }
        }
    }
    library.skills.len()
}

fn check_calibration(c: &mut Checker, data: &Path, present: &BTreeMap<Site, Vec<Task>>) -> usize {
    let path = data.join("calibration_set.json");
    let mut families: Vec<(Site, Vec<usize>)> = Vec::new();
    if path.exists() {
        let value = match read_json(&path) {
            Ok(v) => v,
            Err(e) => {
                c.add(&path, None, "", e.to_string());
                return 0;
            }
        };
        for &site in Site::ALL {
            let entry = &value["sites"][site.as_str()];
            let field = format!("sites.{site}.families");
            match entry["families"].as_array() {
                None => c.add(&path, None, &field, "is missing or not an array"),
                Some(list) => {
                    let ids: Vec<usize> = list.iter().filter_map(|v| v.as_u64()).map(|v| v as usize).collect();
                    if ids.len() != list.len() {
                        c.add(&path, None, &field, "holds a value that is not a task id");
                    }
                    if entry["n_tasks"].as_u64() != Some(site.n_tasks() as u64) {
                        c.add(&path, None, &format!("sites.{site}.n_tasks"), format!("expected {}", site.n_tasks()));
                    }
                    families.push((site, ids));
                }
            }
        }
    } else {
        for &site in Site::ALL {
            families.push((site, calibration_rule(site.n_tasks(), calibration_k(site))));
        }
    }
    let mut n = 0;
    for (site, ids) in families {
        let Some(tasks) = present.get(&site) else { continue };
        for id in ids {
            n += 1;
            if id >= tasks.len() {
                c.add(
                    &path,
                    None,
                    &format!("sites.{site}.families"),
                    format!("family {site}.{id} does not resolve to a task"),
                );
            }
        }
    }
    n
}

/// Why a JSON file of the data directory did not read: the reader's or the parser's message alone.
#[derive(Debug, thiserror::Error)]
enum JsonFileError {
    #[error("{0}")]
    Read(std::io::Error),
    #[error("{0}")]
    Json(serde_json::Error),
}

fn read_json(path: &Path) -> Result<serde_json::Value, JsonFileError> {
    let text = std::fs::read_to_string(path).map_err(JsonFileError::Read)?;
    serde_json::from_str(&text).map_err(JsonFileError::Json)
}

fn check_digests(c: &mut Checker, data: &Path) {
    let path = data.join("DIGESTS.json");
    let value = match read_json(&path) {
        Ok(v) => v,
        Err(e) => return c.add(&path, None, "", e.to_string()),
    };
    for &site in Site::ALL {
        for &version in Version::ALL {
            let image = site.image(version);
            let ok = value[&image].as_str().is_some_and(|d| {
                d.strip_prefix("sha256:").is_some_and(|h| h.len() == 64 && h.bytes().all(|b| b.is_ascii_hexdigit()))
            });
            if !ok {
                c.add(&path, None, &image, "is missing or not a sha256:<64 hex> digest");
            }
        }
    }
}

/// Validates the data directory for `sites` (all three in a complete checkout).
pub fn validate(data: &Path, sites: &[Site]) -> Result<Summary, Vec<Problem>> {
    let mut c = Checker { problems: Vec::new() };
    let mut summary = Summary::default();
    let mut present: BTreeMap<Site, Vec<Task>> = BTreeMap::new();
    for &site in Site::ALL {
        if !sites.contains(&site) {
            continue;
        }
        let v1_path: PathBuf = task_file_path(data, site, Version::V1);
        let v1 = load_tasks(&mut c, &v1_path, site);
        let v2_path = task_file_path(data, site, Version::V2);
        let v2 = load_tasks(&mut c, &v2_path, site);
        for (version, tasks) in [(Version::V1, &v1), (Version::V2, &v2)] {
            if let Some(t) = tasks {
                summary.files.push((site, version, t.len()));
                check_solutions(&mut c, data, site, version, t.len());
                check_real(&mut c, data, site, version, t);
            }
        }
        if let (Some(a), Some(b)) = (&v1, &v2) {
            check_alignment(&mut c, &v2_path, a, b);
        }
        if let Some(a) = v1 {
            present.insert(site, a);
        }
    }
    summary.skills = check_skills(&mut c, data, &present);
    summary.calibration_families = check_calibration(&mut c, data, &present);
    check_digests(&mut c, data);
    if c.problems.is_empty() {
        Ok(summary)
    } else {
        Err(c.problems)
    }
}
