//! The GitLab task families: 23 intent templates instantiated from the seed
//! into 162 tasks per version (65 string_match, 57 program_html, 40
//! url_match), the reference solution of each task in each version, and the
//! example skill library (one skill per template, the v1 steps).
//!
//! Task `i` of v1 and v2 is the same template and instantiation; only the
//! steps (and, where the site differs, URLs and locators) follow the version.

use std::collections::BTreeMap;

use skillshift_common::skills::{Skill, Step};
use skillshift_common::task::{Eval, EvalType, ProgramHtml, ReferenceAnswers, RequiredContents, Task};
use skillshift_common::{Site, Version};

use super::data::{Project, Seed, ME, ROLES};
use crate::kit::rng::Rng;
use crate::kit::tasks::{click, fill, goto, read, select, tgt};
use crate::kit::url::encode_form;
use crate::GeneratedTask;

const G: &str = "__GITLAB__";

#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    String,
    Program,
    Url,
}

/// One instantiation: its arguments, where it starts and how it is judged.
struct Inst {
    args: Vec<(&'static str, String)>,
    start: String,
    check: Check,
}

enum Check {
    Answer(String),
    Url(String),
    /// A reference URL that differs per version (v1, v2).
    UrlByVersion(String, String),
    Html(Vec<ProgramHtml>),
}

struct Template {
    id: u32,
    skill: &'static str,
    intent: &'static str,
    kind: Kind,
    count: usize,
}

const TEMPLATES: &[Template] = &[
    Template { id: 0, skill: "count_open_issues", intent: "How many open issues does the project {{project}} have?", kind: Kind::String, count: 10 },
    Template { id: 1, skill: "find_user_email", intent: "What is the email address of {{name}} (@{{username}}) on GitLab?", kind: Kind::String, count: 9 },
    Template { id: 2, skill: "read_issue_assignee", intent: "Who is assigned to issue #{{iid}} of {{project}}?", kind: Kind::String, count: 9 },
    Template { id: 3, skill: "read_milestone_due_date", intent: "When is the milestone {{milestone}} of {{project}} due?", kind: Kind::String, count: 9 },
    Template { id: 4, skill: "find_top_contributor", intent: "Who has made the most commits to {{project}}?", kind: Kind::String, count: 9 },
    Template { id: 5, skill: "read_mr_source_branch", intent: "What is the source branch of the merge request \"{{title}}\" in {{project}}?", kind: Kind::String, count: 10 },
    Template { id: 6, skill: "count_members", intent: "How many members does {{project}} have?", kind: Kind::String, count: 9 },
    Template { id: 7, skill: "close_issue", intent: "Close issue #{{iid}} of {{project}}", kind: Kind::Program, count: 8 },
    Template { id: 8, skill: "add_issue_label", intent: "Add the label \"{{label}}\" to issue #{{iid}} of {{project}}", kind: Kind::Program, count: 7 },
    Template { id: 9, skill: "create_milestone", intent: "Create a milestone \"{{title}}\" in {{project}} due on {{due_date}}", kind: Kind::Program, count: 6 },
    Template { id: 10, skill: "invite_member", intent: "Invite {{username}} to {{project}} as {{role}}", kind: Kind::Program, count: 7 },
    Template { id: 11, skill: "comment_on_mr", intent: "Comment \"{{comment}}\" on the merge request \"{{title}}\" in {{project}}", kind: Kind::Program, count: 6 },
    Template { id: 12, skill: "mute_issue", intent: "Turn off notifications for issue #{{iid}} of {{project}}", kind: Kind::Program, count: 6 },
    Template { id: 13, skill: "lock_mr", intent: "Lock the discussion of the merge request \"{{title}}\" in {{project}}", kind: Kind::Program, count: 6 },
    Template { id: 14, skill: "create_full_issue", intent: "Create an issue \"{{title}}\" in {{project}} assigned to {{assignee}}, labelled {{label}}, in milestone {{milestone}}", kind: Kind::Program, count: 6 },
    Template { id: 15, skill: "update_bio", intent: "Change the bio of my GitLab profile to \"{{bio}}\"", kind: Kind::Program, count: 5 },
    Template { id: 16, skill: "open_milestones", intent: "Open the milestones page of {{project}}", kind: Kind::Url, count: 6 },
    Template { id: 17, skill: "open_issue_boards", intent: "Show me the issue boards of {{project}}", kind: Kind::Url, count: 6 },
    Template { id: 18, skill: "open_repository_graph", intent: "Open the repository graph of {{project}}", kind: Kind::Url, count: 5 },
    Template { id: 19, skill: "open_pipeline_schedules", intent: "Show the pipeline schedules of {{project}}", kind: Kind::Url, count: 5 },
    Template { id: 20, skill: "list_labelled_issues", intent: "List the open issues labelled \"{{label}}\" in {{project}}", kind: Kind::Url, count: 6 },
    Template { id: 21, skill: "search_gitlab", intent: "Search GitLab for \"{{query}}\"", kind: Kind::Url, count: 7 },
    Template { id: 22, skill: "open_profile_settings", intent: "From the project {{project}}, open my profile settings", kind: Kind::Url, count: 5 },
];

const PROJECT: &str = "__GITLAB__/{{project}}";

/// The members table as text, a line per member with its cells joined by ` | `
/// (`Zoe Nak @zoenak | Guest | No expiration`).
const MEMBER_ROWS: &str = "[...document.querySelectorAll(\"#members-table tbody tr\")].map(r => [...r.cells].map(c => c.textContent.trim()).join(\" | \")).join(\"\\n\")";

/// The steps of template `id` in `version`, with `{{param}}` placeholders.
fn steps(id: u32, version: Version) -> Vec<Step> {
    let v2 = version == Version::V2;
    // Opening a collapsed super-sidebar section first (G10) in v2.
    let section = |name: &str| if v2 { vec![click("button", name)] } else { vec![] };
    let issue = "__GITLAB__/{{project}}/-/issues/{{iid}}";
    let mut s: Vec<Step> = Vec::new();
    match id {
        0 => s.extend([goto(PROJECT), click("link", "Issues"), read("status", "Open issues")]),
        1 => {
            s.push(goto(G));
            if v2 {
                s.push(click("button", "Search or go to…"));
            }
            s.extend([
                fill("searchbox", "Search GitLab", "{{username}}"),
                Step::Press { target: tgt("searchbox", "Search GitLab"), key: "Enter".into() },
                click("link", "{{name}}"),
                read("definition", "Email"),
            ]);
        }
        2 => s.extend([goto(issue), read("definition", "Assignee")]),
        3 => {
            s.push(goto(PROJECT));
            s.extend(section("Plan"));
            s.extend([click("link", "Milestones"), click("link", "{{milestone}}"), read("definition", "Due date")]);
        }
        4 => {
            s.push(goto(PROJECT));
            s.extend(section("Analyze"));
            s.extend([click("link", "Contributors"), read("definition", "Top contributor")]);
        }
        5 => s.extend([
            goto(PROJECT),
            click("link", "Merge requests"),
            click("link", "{{title}}"),
            read("definition", "Source branch"),
        ]),
        6 => {
            s.push(goto(PROJECT));
            s.extend(section("Manage"));
            s.extend([click("link", "Members"), read("status", "Members count")]);
        }
        7 => {
            s.push(goto(issue));
            if v2 {
                s.extend([click("button", "Issue actions"), click("menuitem", "Close issue")]);
            } else {
                s.push(click("button", "Close issue"));
            }
        }
        8 => s.extend([goto(issue), select("Add label", "{{label}}"), click("button", "Add label")]),
        9 => {
            s.push(goto(PROJECT));
            s.extend(section("Plan"));
            s.extend([
                click("link", "Milestones"),
                click("link", "New milestone"),
                fill("textbox", "Title", "{{title}}"),
                fill("textbox", "Due date", "{{due_date}}"),
                click("button", "Create milestone"),
            ]);
        }
        10 => {
            s.push(goto(PROJECT));
            s.extend(section("Manage"));
            s.extend([
                click("link", "Members"),
                click("button", "Invite members"),
                fill("textbox", "Username or email address", "{{username}}"),
                select("Select a role", "{{role}}"),
                click("button", "Invite"),
            ]);
        }
        11 => s.extend([
            goto(PROJECT),
            click("link", "Merge requests"),
            click("link", "{{title}}"),
            fill("textbox", "Comment", "{{comment}}"),
            click("button", "Comment"),
        ]),
        12 => {
            s.push(goto(issue));
            if v2 {
                s.extend([click("button", "Issue actions"), click("menuitem", "Turn off notifications")]);
            } else {
                s.push(click("button", "Turn off notifications"));
            }
        }
        13 => {
            s.extend([goto(PROJECT), click("link", "Merge requests"), click("link", "{{title}}")]);
            if v2 {
                s.extend([click("button", "Merge request actions"), click("menuitem", "Lock merge request")]);
            } else {
                s.push(click("button", "Lock merge request"));
            }
        }
        14 => s.extend([
            goto(PROJECT),
            click("link", "Issues"),
            click("link", "New issue"),
            fill("textbox", "Title (required)", "{{title}}"),
            fill("textbox", "Description", "{{title}}"),
            select("Assignee", "{{assignee}}"),
            select("Label", "{{label}}"),
            select("Milestone", "{{milestone}}"),
            click("button", "Create issue"),
        ]),
        15 => {
            // 16.7 moved user settings to /-/user_settings (the old path redirects).
            let url = if v2 { "__GITLAB__/-/user_settings/profile" } else { "__GITLAB__/-/profile" };
            s.extend([goto(url), fill("textbox", "Bio", "{{bio}}"), click("button", "Update profile settings")]);
        }
        16 => {
            s.push(goto(PROJECT));
            s.extend(section("Plan"));
            s.push(click("link", "Milestones"));
        }
        17 => {
            s.push(goto(PROJECT));
            s.extend(section("Plan"));
            s.push(click("link", if v2 { "Issue boards" } else { "Boards" }));
        }
        18 => {
            s.push(goto(PROJECT));
            s.extend(section("Code"));
            s.push(click("link", if v2 { "Repository graph" } else { "Graph" }));
        }
        19 => {
            s.push(goto(PROJECT));
            s.extend(section("Build"));
            s.push(click("link", if v2 { "Pipeline schedules" } else { "Schedules" }));
        }
        20 => {
            s.extend([goto(PROJECT), click("link", "Issues"), select("Label", "{{label}}"), click("button", "Apply")])
        }
        21 => {
            s.push(goto(G));
            if v2 {
                s.push(click("button", "Search or go to…"));
            }
            s.extend([
                fill("searchbox", "Search GitLab", "{{query}}"),
                Step::Press { target: tgt("searchbox", "Search GitLab"), key: "Enter".into() },
            ]);
        }
        22 => s.extend([goto(PROJECT), click("button", "User menu"), click("menuitem", "Edit profile")]),
        _ => {}
    }
    s
}

fn html_check(url: String, locator: &str, must_include: Vec<String>) -> ProgramHtml {
    ProgramHtml {
        url: url.into(),
        locator: locator.into(),
        required_contents: RequiredContents { exact_match: None, must_include: Some(must_include) },
        prep_actions: vec![],
    }
}

fn exact_check(url: String, locator: &str, exact: &str) -> ProgramHtml {
    ProgramHtml {
        url: url.into(),
        locator: locator.into(),
        required_contents: RequiredContents { exact_match: Some(exact.to_string()), must_include: None },
        prep_actions: vec![],
    }
}

/// Picks `n` distinct items by a seeded shuffle.
fn sample<T: Clone>(rng: &mut Rng, items: &[T], n: usize) -> Vec<T> {
    let mut idx: Vec<usize> = (0..items.len()).collect();
    for i in (1..idx.len()).rev() {
        let j = rng.below(i + 1);
        idx.swap(i, j);
    }
    idx.into_iter().take(n).map(|i| items[i].clone()).collect()
}

fn instances(seed: &Seed, tpl: &Template, rng: &mut Rng) -> Vec<Inst> {
    let projects: Vec<&Project> = seed.projects.iter().collect();
    let n = tpl.count;
    let pu = |p: &Project| format!("{G}/{}", p.path);
    let project_arg = |p: &Project| ("project", p.path.clone());
    match tpl.id {
        0 => sample(rng, &projects, n)
            .into_iter()
            .map(|p| Inst {
                args: vec![project_arg(p)],
                start: G.into(),
                check: Check::Answer(p.issues.iter().filter(|i| !i.closed).count().to_string()),
            })
            .collect(),
        1 => sample(rng, &seed.users[1..], n)
            .into_iter()
            .map(|u| Inst {
                args: vec![("name", u.name.clone()), ("username", u.username.clone())],
                start: G.into(),
                check: Check::Answer(u.email.clone()),
            })
            .collect(),
        2 | 7 | 8 | 12 => {
            let mut pairs = Vec::new();
            for p in &projects {
                for i in &p.issues {
                    let ok = match tpl.id {
                        2 => i.assignee.is_some(),
                        7 | 12 => !i.closed,
                        _ => i.labels.len() < p.labels.len(),
                    };
                    if ok {
                        pairs.push((*p, i.iid));
                    }
                }
            }
            sample(rng, &pairs, n)
                .into_iter()
                .map(|(p, iid)| {
                    let i = &p.issues[iid - 1];
                    let url = format!("{}/-/issues/{iid}", pu(p));
                    let mut args = vec![("iid", iid.to_string()), project_arg(p)];
                    let check = match tpl.id {
                        2 => Check::Answer(seed.display(i.assignee.as_deref().unwrap_or(""))),
                        7 => Check::Html(vec![exact_check(
                            url.clone(),
                            "document.querySelector(\"#issue-state\").innerText",
                            "Closed",
                        )]),
                        12 => Check::Html(vec![html_check(
                            url.clone(),
                            "document.querySelector(\"#notifications-status\").innerText",
                            vec!["turned off".into()],
                        )]),
                        _ => {
                            let free: Vec<&str> = p
                                .labels
                                .iter()
                                .map(|l| l.name.as_str())
                                .filter(|l| !i.labels.iter().any(|have| have.contains(l) || l.contains(have.as_str())))
                                .collect();
                            let label = free.get(rng.below(free.len().max(1))).copied().unwrap_or("bug").to_string();
                            args.insert(1, ("label", label.clone()));
                            Check::Html(vec![html_check(
                                url.clone(),
                                "document.querySelector(\"#sidebar-labels\").innerText",
                                vec![label],
                            )])
                        }
                    };
                    Inst { args, start: url, check }
                })
                .collect()
        }
        3 => {
            let mut pairs = Vec::new();
            for p in &projects {
                for m in p.milestones.iter().filter(|m| !m.closed) {
                    pairs.push((*p, m.title.clone(), m.due_date.clone()));
                }
            }
            sample(rng, &pairs, n)
                .into_iter()
                .map(|(p, title, due)| Inst {
                    args: vec![("milestone", title), project_arg(p)],
                    start: pu(p),
                    check: Check::Answer(due),
                })
                .collect()
        }
        4 => sample(rng, &projects, n)
            .into_iter()
            .map(|p| Inst {
                args: vec![project_arg(p)],
                start: pu(p),
                check: Check::Answer(seed.display(&p.contributors[0].0)),
            })
            .collect(),
        5 | 11 | 13 => {
            let mut pairs = Vec::new();
            for p in &projects {
                for m in p.merge_requests.iter().filter(|m| m.state == "opened") {
                    pairs.push((*p, m.iid));
                }
            }
            sample(rng, &pairs, n)
                .into_iter()
                .enumerate()
                .map(|(k, (p, iid))| {
                    let m = &p.merge_requests[iid - 1];
                    let url = format!("{}/-/merge_requests/{iid}", pu(p));
                    let mut args = vec![project_arg(p), ("title", m.title.clone())];
                    let check = match tpl.id {
                        5 => Check::Answer(m.source_branch.clone()),
                        11 => {
                            let comment = format!(
                                "{} Reviewed on day {}.",
                                ["LGTM.", "Please add tests.", "Needs a rebase.", "Nice work!"][k % 4],
                                k + 3
                            );
                            args.insert(0, ("comment", comment.clone()));
                            Check::Html(vec![html_check(url, "", vec![comment])])
                        }
                        _ => Check::Html(vec![html_check(
                            url,
                            "document.querySelector(\"#discussion-lock\").innerText",
                            vec!["is locked".into()],
                        )]),
                    };
                    Inst { args, start: G.into(), check }
                })
                .collect()
        }
        6 => sample(rng, &projects, n)
            .into_iter()
            .map(|p| Inst {
                args: vec![project_arg(p)],
                start: pu(p),
                check: Check::Answer(p.members.len().to_string()),
            })
            .collect(),
        9 => sample(rng, &projects, n)
            .into_iter()
            .enumerate()
            .map(|(k, p)| {
                let title = format!("Sprint {}", 40 + k * 3);
                let due = format!("2027-0{}-{:02}", 1 + k % 9, 10 + k);
                Inst {
                    args: vec![("due_date", due.clone()), project_arg(p), ("title", title.clone())],
                    start: G.into(),
                    check: Check::Html(vec![html_check(format!("{}/-/milestones", pu(p)), "", vec![title, due])]),
                }
            })
            .collect(),
        10 => sample(rng, &projects, n)
            .into_iter()
            .enumerate()
            .map(|(k, p)| {
                // Users 1..=10 are never seeded as members, so the invitation always changes state.
                let user = &seed.users[1 + (k * 3) % 10];
                let role = ROLES[k % 4].to_string();
                Inst {
                    args: vec![project_arg(p), ("role", role.clone()), ("username", user.username.clone())],
                    start: G.into(),
                    // One line per member, its cells joined by " | ": the check names the row, not a run of
                    // text across cells (Chromium's innerText separates table cells with a tab).
                    check: Check::Html(vec![html_check(
                        format!("{}/-/project_members", pu(p)),
                        MEMBER_ROWS,
                        vec![format!("@{} | {role}", user.username)],
                    )]),
                }
            })
            .collect(),
        14 => sample(rng, &projects, n)
            .into_iter()
            .enumerate()
            .map(|(k, p)| {
                let title = format!(
                    "Audit the {} flow (task {k})",
                    ["login", "checkout", "export", "upload", "search", "billing"][k % 6]
                );
                let assignee = seed.display(&p.members[k % p.members.len()].username);
                let label = p.labels[k % p.labels.len()].name.clone();
                let milestone = p.milestones.iter().find(|m| !m.closed).map(|m| m.title.clone()).unwrap_or_default();
                let url = format!("{}/-/issues/{}", pu(p), p.issues.len() + 1);
                Inst {
                    args: vec![
                        ("assignee", assignee.clone()),
                        ("label", label.clone()),
                        ("milestone", milestone.clone()),
                        project_arg(p),
                        ("title", title.clone()),
                    ],
                    start: G.into(),
                    check: Check::Html(vec![
                        html_check(url.clone(), "document.querySelector(\".issue-main h1\").outerText", vec![title]),
                        html_check(
                            url.clone(),
                            "document.querySelector(\"[aria-labelledby='d-assignee']\").outerText",
                            vec![assignee],
                        ),
                        html_check(
                            url.clone(),
                            "document.querySelector(\"#sidebar-milestone\").outerText",
                            vec![milestone],
                        ),
                        html_check(url, "document.querySelector(\"#sidebar-labels\").innerText", vec![label]),
                    ]),
                }
            })
            .collect(),
        15 => (0..n)
            .map(|k| {
                let bio = format!(
                    "{} since {}.",
                    [
                        "Reviewing accessibility fixes",
                        "Shipping small merge requests",
                        "Writing docs first",
                        "Triaging bugs on Mondays",
                        "Keeping pipelines green"
                    ][k % 5],
                    2015 + k
                );
                Inst {
                    args: vec![("bio", bio.clone())],
                    start: G.into(),
                    check: Check::Html(vec![html_check(
                        format!("{G}/{ME}"),
                        "document.querySelector(\"[aria-labelledby='p-bio']\").outerText",
                        vec![bio],
                    )]),
                }
            })
            .collect(),
        16..=19 => {
            let path = match tpl.id {
                16 => "/-/milestones",
                17 => "/-/boards",
                18 => "/-/network/main",
                _ => "/-/pipeline_schedules",
            };
            sample(rng, &projects, n)
                .into_iter()
                .map(|p| Inst {
                    args: vec![project_arg(p)],
                    start: G.into(),
                    check: Check::Url(format!("{}{path}", pu(p))),
                })
                .collect()
        }
        20 => {
            let mut pairs = Vec::new();
            for p in &projects {
                for l in &p.labels {
                    pairs.push((*p, l.name.clone()));
                }
            }
            sample(rng, &pairs, n)
                .into_iter()
                .map(|(p, label)| Inst {
                    args: vec![("label", label.clone()), project_arg(p)],
                    start: G.into(),
                    check: Check::Url(format!("{}/-/issues?state=opened&label_name={}", pu(p), encode_form(&label))),
                })
                .collect()
        }
        22 => sample(rng, &projects, n)
            .into_iter()
            .map(|p| Inst {
                args: vec![project_arg(p)],
                start: pu(p),
                check: Check::UrlByVersion(format!("{G}/-/profile"), format!("{G}/-/user_settings/profile")),
            })
            .collect(),
        _ => ["keyboard focus", "dark mode", "pagination", "sdk", "byte", "timeout", "markdown", "release", "tooltip"]
            .iter()
            .take(n)
            .map(|q| Inst {
                args: vec![("query", q.to_string())],
                start: G.into(),
                check: Check::Url(format!("{G}/search?search={}", encode_form(q))),
            })
            .collect(),
    }
}

fn eval_of(kind: Kind, check: &Check, version: Version) -> Eval {
    let mut eval = Eval::default();
    match (kind, check) {
        (Kind::String, Check::Answer(a)) => {
            eval.eval_types.push(EvalType::StringMatch);
            eval.reference_answers =
                Some(ReferenceAnswers { exact_match: Some(a.clone()), must_include: None, fuzzy_match: None });
        }
        (Kind::Url, Check::Url(u)) => {
            eval.eval_types.push(EvalType::UrlMatch);
            eval.reference_url = Some(u.clone());
        }
        (Kind::Url, Check::UrlByVersion(v1, v2)) => {
            eval.eval_types.push(EvalType::UrlMatch);
            eval.reference_url = Some(if version == Version::V1 { v1.clone() } else { v2.clone() });
        }
        (_, Check::Html(checks)) => {
            eval.eval_types.push(EvalType::ProgramHtml);
            eval.program_html = checks.clone();
        }
        _ => {}
    }
    eval
}

/// Every instantiation of every template, interleaved round-robin so that any
/// stride through the file (the calibration subset) meets many templates.
fn instantiate() -> Vec<(&'static Template, Inst)> {
    let seed = Seed::generate();
    let mut rng = Rng::raw(super::data::SEED ^ 0x7A5C);
    let mut queues: Vec<std::collections::VecDeque<(&'static Template, Inst)>> =
        TEMPLATES.iter().map(|tpl| instances(&seed, tpl, &mut rng).into_iter().map(|i| (tpl, i)).collect()).collect();
    let mut out = Vec::new();
    while queues.iter().any(|q| !q.is_empty()) {
        for q in queues.iter_mut() {
            if let Some(item) = q.pop_front() {
                out.push(item);
            }
        }
    }
    out
}

/// The tasks of `version`, with reference solutions.
pub fn generate(version: Version) -> Vec<GeneratedTask> {
    instantiate()
        .into_iter()
        .enumerate()
        .map(|(task_id, (tpl, inst))| {
            let args: BTreeMap<String, String> = inst.args.iter().map(|(k, v)| (k.to_string(), v.clone())).collect();
            let intent = skillshift_common::skills::substitute(tpl.intent, &args);
            let mut solution: Vec<Step> = steps(tpl.id, version).iter().map(|s| s.bind(&args)).collect();
            if matches!(solution.first(), Some(Step::Goto { url }) if *url == inst.start) {
                solution.remove(0);
            }
            let task = Task {
                task_id: task_id as u32,
                sites: vec![Site::Gitlab.into()],
                require_login: true,
                storage_state: None,
                start_url: inst.start.clone(),
                geolocation: None,
                intent_template: tpl.intent.to_string(),
                instantiation_dict: args
                    .iter()
                    .map(|(k, v)| (k.clone(), serde_json::Value::String(v.clone())))
                    .collect(),
                intent,
                intent_template_id: tpl.id,
                require_reset: tpl.kind == Kind::Program,
                eval: eval_of(tpl.kind, &inst.check, version),
                string_note: None,
            };
            GeneratedTask { task, solution }
        })
        .collect()
}

/// One skill per template, as a skill-learning method would have learned it on v1.
pub fn skills() -> Vec<Skill> {
    let first_args: BTreeMap<u32, Vec<String>> = instantiate()
        .into_iter()
        .map(|(tpl, inst)| (tpl.id, inst.args.iter().map(|(k, _)| k.to_string()).collect::<Vec<_>>()))
        .collect();
    TEMPLATES
        .iter()
        .map(|tpl| {
            let mut params = first_args.get(&tpl.id).cloned().unwrap_or_default();
            params.sort();
            Skill {
                name: tpl.skill.to_string(),
                site: Site::Gitlab,
                params,
                description: tpl.intent.to_string(),
                steps: steps(tpl.id, Version::V1),
            }
        })
        .collect()
}
