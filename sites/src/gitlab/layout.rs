//! The page shell of the GitLab fixture in both versions: v1 (15.x) has a
//! top bar ("Main menu", the "Search GitLab" box, "+", counters, avatar) and
//! a flat project sidebar; v2 (16.x) has no top bar and one super sidebar
//! with "Create new...", "Search or go to…" (a dialog), a "Pinned" section
//! and collapsible Manage / Plan / Code / Build / Analyze / Settings sections
//! (shifts.md G1-G10). Also the numbered pager of GitLab's lists.

use skillshift_common::Version;

use super::data::{Project, ME};
use crate::kit::layout::{current, document};
use crate::kit::text::esc;

/// What the shell needs to render one page.
pub struct Ctx<'a> {
    pub version: Version,
    pub project: Option<&'a Project>,
    /// The key of the active navigation item (see [`NAV`]).
    pub active: &'a str,
    pub flash: Option<String>,
}

/// One project navigation item: key, v1 name, v1 group, v2 name, v2 section, path under the project.
pub struct NavItem {
    pub key: &'static str,
    pub v1: &'static str,
    pub v1_group: &'static str,
    pub v2: &'static str,
    pub v2_section: &'static str,
    pub path: &'static str,
}

const fn item(
    key: &'static str,
    v1: &'static str,
    v1_group: &'static str,
    v2: &'static str,
    v2_section: &'static str,
    path: &'static str,
) -> NavItem {
    NavItem { key, v1, v1_group, v2, v2_section, path }
}

/// Every project page reachable from the sidebar, in v1 order within v1 groups.
pub const NAV: &[NavItem] = &[
    item("activity", "Activity", "Project information", "Activity", "Manage", "/-/activity"),
    item("labels", "Labels", "Project information", "Labels", "Manage", "/-/labels"),
    item("members", "Members", "Project information", "Members", "Manage", "/-/project_members"),
    item("files", "Files", "Repository", "Repository", "Code", "/-/tree/main"),
    item("commits", "Commits", "Repository", "Commits", "Code", "/-/commits/main"),
    item("branches", "Branches", "Repository", "Branches", "Code", "/-/branches"),
    item("tags", "Tags", "Repository", "Tags", "Code", "/-/tags"),
    item("contributors", "Contributors", "Repository", "Contributors", "Analyze", "/-/graphs/main"),
    item("graph", "Graph", "Repository", "Repository graph", "Code", "/-/network/main"),
    item("compare", "Compare", "Repository", "Compare revisions", "Code", "/-/compare"),
    item("issues", "List", "Issues", "Issues", "Plan", "/-/issues"),
    item("boards", "Boards", "Issues", "Issue boards", "Plan", "/-/boards"),
    item("milestones", "Milestones", "Issues", "Milestones", "Plan", "/-/milestones"),
    item("merge_requests", "Merge requests", "", "Merge requests", "Code", "/-/merge_requests"),
    item("pipelines", "Pipelines", "CI/CD", "Pipelines", "Build", "/-/pipelines"),
    item("editor", "Editor", "CI/CD", "Pipeline editor", "Build", "/-/ci/editor"),
    item("jobs", "Jobs", "CI/CD", "Jobs", "Build", "/-/jobs"),
    item("schedules", "Schedules", "CI/CD", "Pipeline schedules", "Build", "/-/pipeline_schedules"),
    item("wiki", "Wiki", "", "Wiki", "Plan", "/-/wikis/home"),
    item("value_stream", "Value stream", "Analytics", "Value stream analytics", "Analyze", "/-/value_stream_analytics"),
    item("settings_general", "General", "Settings", "General", "Settings", "/edit"),
    item("settings_integrations", "Integrations", "Settings", "Integrations", "Settings", "/-/settings/integrations"),
    item("settings_webhooks", "Webhooks", "Settings", "Webhooks", "Settings", "/-/hooks"),
    item("settings_repository", "Repository", "Settings", "Repository", "Settings", "/-/settings/repository"),
    item("settings_cicd", "CI/CD", "Settings", "CI/CD", "Settings", "/-/settings/ci_cd"),
];

/// v1 group headers: name and the key their header link leads to.
const V1_GROUPS: &[(&str, &str)] = &[
    ("Project information", "activity"),
    ("Repository", "files"),
    ("Issues", "issues"),
    ("Merge requests", "merge_requests"),
    ("CI/CD", "pipelines"),
    ("Wiki", "wiki"),
    ("Analytics", "value_stream"),
    ("Settings", "settings_general"),
];

const V2_SECTIONS: &[&str] = &["Manage", "Plan", "Code", "Build", "Analyze", "Settings"];

pub fn nav_item(key: &str) -> Option<&'static NavItem> {
    NAV.iter().find(|i| i.key == key)
}

const STYLE: &str = r#"
*{box-sizing:border-box}body{margin:0;font:14px/1.45 system-ui,-apple-system,"Segoe UI",sans-serif;color:#28272d;background:#fff}
a{color:#1f75cb;text-decoration:none}a:hover{text-decoration:underline}
.topbar{display:flex;align-items:center;gap:12px;background:#292961;color:#fff;padding:6px 14px;height:48px}
.topbar a,.topbar button{color:#fff}.topbar .brand{font-weight:700;font-size:16px}
.topbar input[type=search]{background:#4a4a8a;border:0;border-radius:4px;color:#fff;padding:6px 10px;width:320px}
.topbar input::placeholder{color:#d6d6f0}.topbar .spacer{flex:1}
button{font:inherit;cursor:pointer;border:1px solid #bfbfc3;background:#fff;border-radius:4px;padding:5px 10px;color:#28272d}
.topbar button{background:transparent;border-color:#6a6aa8}
.btn-confirm,button[type=submit].primary{background:#1f75cb;color:#fff;border-color:#1f75cb}
.btn-danger{background:#dd2b0e;color:#fff;border-color:#dd2b0e}
.layout{display:flex;min-height:calc(100vh - 48px)}.v2 .layout{min-height:100vh}
aside.sidebar{width:240px;flex:none;background:#fbfafd;border-right:1px solid #dcdcde;padding:8px 0}
.v2 aside.sidebar{background:#f5f5f6;width:256px}
aside ul{list-style:none;margin:0;padding:0}aside li a{display:block;padding:4px 16px;color:#28272d;border-radius:4px}
aside li a[aria-current]{background:#e9e9f0;font-weight:600}aside .group>a{font-weight:600;margin-top:6px}
aside .sub a{padding-left:30px;font-size:13px}.count{background:#ececef;border-radius:9px;padding:0 6px;font-size:12px;margin-left:4px}
.section-toggle{display:block;width:calc(100% - 16px);margin:2px 8px;text-align:left;border:0;background:transparent;font-weight:600}
.section-toggle[aria-expanded=true]::before{content:"▾ " / ""}.section-toggle[aria-expanded=false]::before{content:"▸ " / ""}
.sidebar-top{display:flex;gap:6px;padding:4px 10px 10px;align-items:center;flex-wrap:wrap}
.search-trigger{width:100%;text-align:left;color:#626168}
main{flex:1;padding:16px 28px;max-width:1100px}
h1{font-size:22px;margin:8px 0 12px}h2{font-size:17px}
table{border-collapse:collapse;width:100%}th,td{border-bottom:1px solid #ececef;padding:7px 8px;text-align:left}
.flash{padding:10px 14px;border-radius:4px;background:#ecf4ee;border:1px solid #a6d2b5;margin-bottom:12px}
.flash.alert{background:#fdf1f1;border-color:#f2b7b0}
[role=menu]{position:absolute;background:#fff;border:1px solid #dcdcde;border-radius:4px;box-shadow:0 4px 12px rgba(0,0,0,.15);padding:4px 0;z-index:10;min-width:200px;color:#28272d}
[role=menu] li{list-style:none}[role=menu] a,[role=menu] button{display:block;width:100%;text-align:left;border:0;background:none;padding:6px 14px;color:#28272d}
.menu-wrap{position:relative;display:inline-block}
[role=dialog]{position:fixed;top:12%;left:50%;transform:translateX(-50%);background:#fff;border:1px solid #bfbfc3;border-radius:8px;box-shadow:0 12px 48px rgba(0,0,0,.3);padding:16px 20px;z-index:20;width:520px}
[hidden]{display:none!important}
dl.details{display:grid;grid-template-columns:160px 1fr;gap:6px 12px}dt{color:#626168}dd{margin:0}
.issue-layout{display:flex;gap:24px}.issue-main{flex:1}.issue-sidebar{width:280px;border-left:1px solid #ececef;padding-left:16px}
.badge{display:inline-block;border-radius:10px;padding:1px 8px;font-size:12px;background:#ececef}
.state-open{background:#c3e6cd;color:#24663b}.state-closed{background:#cbe2f9;color:#0b5cad}
.tabs{display:flex;gap:4px;border-bottom:1px solid #dcdcde;margin-bottom:12px}.tabs a{padding:8px 12px}.tabs a[aria-current]{border-bottom:2px solid #1f75cb;font-weight:600}
label{display:block;font-weight:600;margin:10px 0 4px}input[type=text],input[type=search],input[type=email],input[type=date],input[type=password],textarea,select{font:inherit;padding:6px 8px;border:1px solid #89888d;border-radius:4px;min-width:280px}
textarea{width:100%;min-height:90px}.pagination ul{display:flex;gap:8px;list-style:none;padding:0}
.filters{display:flex;gap:12px;align-items:flex-end;flex-wrap:wrap;margin-bottom:12px}.filters label{margin:0 0 2px}
"#;

fn project_url(p: &Project, path: &str) -> String {
    format!("/{}{}", p.path, path)
}

/// The whole page: shell, navigation for the version, flash and `body`.
pub fn shell(ctx: &Ctx<'_>, title: &str, body: &str) -> String {
    let version_class = match ctx.version {
        Version::V1 => "v1",
        Version::V2 => "v2",
    };
    let flash = match &ctx.flash {
        Some(f) if f.starts_with('!') => format!(r#"<div class="flash alert" role="alert">{}</div>"#, esc(&f[1..])),
        Some(f) => format!(r#"<div class="flash" role="status">{}</div>"#, esc(f)),
        None => String::new(),
    };
    let page_title = match ctx.project {
        Some(p) => format!("{title} · {} · GitLab", p.path),
        None => format!("{title} · GitLab"),
    };
    let (top, side) = match ctx.version {
        Version::V1 => (v1_topbar(ctx), v1_sidebar(ctx)),
        Version::V2 => (String::new(), v2_sidebar(ctx)),
    };
    document(
        &format!(r#"lang="en" class="{version_class}""#),
        &page_title,
        &[STYLE],
        version_class,
        &format!(r#"{top}<div class="layout">{side}<main id="content-body">{flash}{body}</main></div>"#),
    )
}

fn new_menu_items(ctx: &Ctx<'_>) -> String {
    let mut items = String::new();
    if let Some(p) = ctx.project {
        items.push_str(&format!(
            r#"<li role="none"><a role="menuitem" href="{}">New issue</a></li><li role="none"><a role="menuitem" href="{}">New merge request</a></li>"#,
            project_url(p, "/-/issues/new"),
            project_url(p, "/-/merge_requests")
        ));
    }
    items.push_str(r#"<li role="none"><a role="menuitem" href="/projects/new">New project</a></li><li role="none"><a role="menuitem" href="/dashboard/snippets">New snippet</a></li>"#);
    items
}

fn user_menu() -> String {
    format!(
        r#"<div class="menu-wrap"><button type="button" aria-haspopup="menu" aria-expanded="false" aria-controls="user-menu" aria-label="User menu">{ME}</button><ul role="menu" id="user-menu" hidden><li role="none"><a role="menuitem" href="/{ME}">Profile</a></li><li role="none"><a role="menuitem" href="/-/profile">Edit profile</a></li><li role="none"><form method="post" action="/users/sign_out"><button type="submit" role="menuitem">Sign out</button></form></li></ul></div>"#
    )
}

fn v1_topbar(ctx: &Ctx<'_>) -> String {
    format!(
        r#"<header class="topbar"><a class="brand" href="/" aria-label="Dashboard">GitLab</a>
<div class="menu-wrap"><button type="button" aria-expanded="false" aria-controls="main-menu">Main menu</button>
<ul id="main-menu" hidden class="dropdown" style="position:absolute;background:#fff;padding:8px;border:1px solid #ccc;z-index:9"><li><a href="/dashboard/projects" style="color:#28272d">Projects</a></li><li><a href="/dashboard/groups" style="color:#28272d">Groups</a></li><li><a href="/dashboard/milestones" style="color:#28272d">Milestones</a></li><li><a href="/dashboard/snippets" style="color:#28272d">Snippets</a></li><li><a href="/dashboard/activity" style="color:#28272d">Activity</a></li></ul></div>
<form role="search" action="/search" method="get"><input type="search" name="search" placeholder="Search GitLab" aria-label="Search GitLab"></form>
<span class="spacer"></span>
<div class="menu-wrap"><button type="button" aria-haspopup="menu" aria-expanded="false" aria-controls="new-menu" aria-label="Create new...">+</button><ul role="menu" id="new-menu" hidden>{}</ul></div>
<a href="/dashboard/issues" aria-label="Assigned issues">Issues</a>
<a href="/dashboard/merge_requests" aria-label="Assigned merge requests">MRs</a>
<a href="/dashboard/todos" aria-label="To-Do List">To-Do</a>
{}</header>"#,
        new_menu_items(ctx),
        user_menu()
    )
}

fn link(href: &str, name: &str, active: bool, count: Option<usize>) -> String {
    let cur = current(active);
    let count = count.map(|c| format!(r#"<span class="count" aria-hidden="true">{c}</span>"#)).unwrap_or_default();
    format!(r#"<li><a href="{}"{cur}>{}{count}</a></li>"#, esc(href), esc(name))
}

fn open_counts(p: &Project) -> (usize, usize) {
    (p.issues.iter().filter(|i| !i.closed).count(), p.merge_requests.iter().filter(|m| m.state == "opened").count())
}

fn v1_sidebar(ctx: &Ctx<'_>) -> String {
    let Some(p) = ctx.project else { return String::new() };
    let (issues, mrs) = open_counts(p);
    let mut out = format!(
        r#"<aside class="sidebar"><nav aria-label="Project navigation"><ul><li class="group"><a href="/{}"{}>{}</a></li>"#,
        esc(&p.path),
        current(ctx.active == "overview"),
        esc(&p.name)
    );
    for (group, head_key) in V1_GROUPS {
        let head = nav_item(head_key).map(|i| i.path).unwrap_or("");
        let count = match *group {
            "Issues" => Some(issues),
            "Merge requests" => Some(mrs),
            _ => None,
        };
        out.push_str(&format!(
            r#"<li class="group"><a href="{}">{}{}</a>"#,
            esc(&project_url(p, head)),
            esc(group),
            count.map(|c| format!(r#"<span class="count" aria-hidden="true">{c}</span>"#)).unwrap_or_default()
        ));
        let subs: Vec<&NavItem> = NAV.iter().filter(|i| i.v1_group == *group).collect();
        if !subs.is_empty() && *group != "Analytics" {
            out.push_str(r#"<ul class="sub">"#);
            for i in subs {
                out.push_str(&link(&project_url(p, i.path), i.v1, ctx.active == i.key, None));
            }
            out.push_str("</ul>");
        }
        out.push_str("</li>");
    }
    out.push_str("</ul></nav></aside>");
    out
}

fn v2_sidebar(ctx: &Ctx<'_>) -> String {
    let mut out = format!(
        r#"<aside class="sidebar"><nav aria-label="Primary navigation"><div class="sidebar-top"><a href="/" aria-label="Homepage" style="font-weight:700">GitLab</a>
<div class="menu-wrap"><button type="button" aria-haspopup="menu" aria-expanded="false" aria-controls="new-menu" aria-label="Create new...">+</button><ul role="menu" id="new-menu" hidden>{}</ul></div>
{}
<a href="/dashboard/issues" aria-label="Assigned issues">◎</a><a href="/dashboard/merge_requests" aria-label="Assigned merge requests">⇄</a><a href="/dashboard/todos" aria-label="To-Do items">✓</a>
<button type="button" class="search-trigger" data-opens="search-dialog">Search or go to…</button></div>"#,
        new_menu_items(ctx),
        user_menu()
    );
    match ctx.project {
        None => {
            out.push_str(r#"<h2 style="font-size:13px;padding:0 16px;color:#626168">Your work</h2><ul>"#);
            for (href, name, key) in [
                ("/dashboard/projects", "Projects", "projects"),
                ("/dashboard/groups", "Groups", "groups"),
                ("/dashboard/issues", "Issues", "dash_issues"),
                ("/dashboard/merge_requests", "Merge requests", "dash_mrs"),
                ("/dashboard/todos", "To-Do List", "todos"),
                ("/dashboard/milestones", "Milestones", "dash_milestones"),
                ("/dashboard/snippets", "Snippets", "snippets"),
                ("/dashboard/activity", "Activity", "dash_activity"),
            ] {
                out.push_str(&link(href, name, ctx.active == key, None));
            }
            out.push_str("</ul>");
        }
        Some(p) => {
            let (issues, mrs) = open_counts(p);
            out.push_str(&format!(
                r#"<ul><li class="group"><a href="/{}"{}>{}</a></li></ul>"#,
                esc(&p.path),
                current(ctx.active == "overview"),
                esc(&p.name)
            ));
            out.push_str(r#"<button type="button" class="section-toggle" aria-expanded="true" aria-controls="section-pinned">Pinned</button><ul id="section-pinned">"#);
            out.push_str(&link(&project_url(p, "/-/issues"), "Issues", false, Some(issues)));
            out.push_str(&link(&project_url(p, "/-/merge_requests"), "Merge requests", false, Some(mrs)));
            out.push_str("</ul>");
            for section in V2_SECTIONS {
                let items: Vec<&NavItem> = NAV.iter().filter(|i| i.v2_section == *section).collect();
                let open = items.iter().any(|i| i.key == ctx.active);
                let id = format!("section-{}", section.to_lowercase());
                out.push_str(&format!(
                    r#"<button type="button" class="section-toggle" aria-expanded="{open}" aria-controls="{id}">{section}</button><ul id="{id}"{}>"#,
                    if open { "" } else { " hidden" }
                ));
                for i in items {
                    let count = match i.key {
                        "issues" => Some(issues),
                        "merge_requests" => Some(mrs),
                        _ => None,
                    };
                    out.push_str(&link(&project_url(p, i.path), i.v2, ctx.active == i.key, count));
                }
                out.push_str("</ul>");
            }
        }
    }
    out.push_str(
        r#"</nav></aside><div role="dialog" aria-modal="true" id="search-dialog" aria-labelledby="search-dialog-title" hidden><h2 id="search-dialog-title">Search or go to…</h2><form role="search" action="/search" method="get"><input type="search" name="search" placeholder="Search GitLab" aria-label="Search GitLab"></form><p><button type="button" data-closes>Close</button></p></div>"#,
    );
    out
}

/// A pagination `<nav>` linking `base` with `page=N` appended (base carries its other query).
pub fn pager(base: &str, page: usize, pages: usize) -> String {
    if pages <= 1 {
        return String::new();
    }
    let sep = if base.contains('?') { '&' } else { '?' };
    let mut out = String::from(r#"<nav aria-label="Pagination" class="pagination"><ul>"#);
    if page > 1 {
        out.push_str(&format!(r#"<li><a href="{}{sep}page={}">Previous</a></li>"#, esc(base), page - 1));
    }
    for p in 1..=pages {
        if p == page {
            out.push_str(&format!(r#"<li><span aria-current="page">{p}</span></li>"#));
        } else {
            out.push_str(&format!(
                r#"<li><a href="{}{sep}page={p}" aria-label="Go to page {p}">{p}</a></li>"#,
                esc(base)
            ));
        }
    }
    if page < pages {
        out.push_str(&format!(r#"<li><a href="{}{sep}page={}">Next</a></li>"#, esc(base), page + 1));
    }
    out.push_str("</ul></nav>");
    out
}
