//! Issues, merge requests, milestones, labels and members: their lists
//! (search, filters, pagination), detail pages and every form that changes
//! state (POST, then redirect with a flash). v2 moves the issue's Close /
//! Notifications / Copy reference / Lock actions into an "Issue actions" ⋮
//! menu (G11, G13), and the merge request's into "Merge request actions",
//! showing its sidebar on Overview only (G12).

use axum::http::StatusCode;
use axum::response::Response;
use skillshift_common::Version;

use super::data::{Comment, Issue, Label, MergeRequest, Milestone, Project, ME, ROLES};
use super::layout::pager;
use super::layout::{self, Ctx};
use super::pages::PER_PAGE;
use super::{who, Req, World};
use crate::kit::layout::current;
use crate::kit::paging::paginate;
use crate::kit::text::esc;
use crate::kit::url::{encode_form, field};
use crate::kit::web::{page, redirect};

pub(super) fn get(world: &World, req: &Req<'_>, flash: Option<String>, p: &Project, rest: &[&str]) -> Option<Response> {
    let (active, title, body) = match rest {
        ["issues"] => ("issues", "Issues".to_string(), issues_list(world, req, p)),
        ["issues", "new"] => ("issues", "New issue".to_string(), new_issue(world, p)),
        ["issues", iid] => {
            let i = p.issues.iter().find(|i| i.iid.to_string() == *iid)?;
            ("issues", i.title.clone(), issue_page(world, req.version, p, i))
        }
        ["merge_requests"] => ("merge_requests", "Merge requests".to_string(), mr_list(world, req, p)),
        ["merge_requests", iid, tab @ ..] => {
            let m = p.merge_requests.iter().find(|m| m.iid.to_string() == *iid)?;
            let tab = match tab {
                [] => "overview",
                ["commits"] => "commits",
                ["pipelines"] => "pipelines",
                ["diffs"] => "diffs",
                _ => return None,
            };
            ("merge_requests", m.title.clone(), mr_page(world, req.version, p, m, tab))
        }
        ["milestones"] => ("milestones", "Milestones".to_string(), milestones_list(req, p)),
        ["milestones", "new"] => ("milestones", "New milestone".to_string(), new_milestone(p)),
        ["milestones", id] => {
            let m = p.milestones.iter().find(|m| m.id.to_string() == *id)?;
            ("milestones", m.title.clone(), milestone_page(p, m))
        }
        ["labels"] => ("labels", "Labels".to_string(), labels_list(req, p)),
        ["labels", "new"] => ("labels", "New label".to_string(), new_label(p)),
        ["project_members"] => ("members", "Members".to_string(), members(world, p)),
        _ => return None,
    };
    let ctx = Ctx { version: req.version, project: Some(p), active, flash };
    Some(page(StatusCode::OK, layout::shell(&ctx, &title, &body)))
}

fn base(p: &Project) -> String {
    format!("/{}", p.path)
}

fn options(items: &[(String, String)], selected: &str) -> String {
    items
        .iter()
        .map(|(v, l)| {
            let sel = if v == selected { " selected" } else { "" };
            format!(r#"<option value="{}"{sel}>{}</option>"#, esc(v), esc(l))
        })
        .collect()
}

fn issues_list(world: &World, req: &Req<'_>, p: &Project) -> String {
    let state = req.q("state").unwrap_or("opened");
    let search = req.q("search").unwrap_or("").trim().to_string();
    let label = req.q("label_name").unwrap_or("").to_string();
    let matching: Vec<&Issue> = p
        .issues
        .iter()
        .filter(|i| match state {
            "closed" => i.closed,
            "all" => true,
            _ => !i.closed,
        })
        .filter(|i| search.is_empty() || i.title.to_lowercase().contains(&search.to_lowercase()))
        .filter(|i| label.is_empty() || i.labels.contains(&label))
        .collect();
    let (shown, pages) = paginate(&matching, req.page_number(), PER_PAGE);
    let rows: String = shown
        .iter()
        .map(|i| {
            format!(
                r#"<tr><td>#{}</td><td><a href="{}/-/issues/{}">{}</a></td><td>{}</td><td>{}</td><td>{}</td></tr>"#,
                i.iid,
                esc(&base(p)),
                i.iid,
                esc(&i.title),
                i.assignee.as_deref().map(|a| who(world, a)).unwrap_or_default(),
                esc(&i.labels.join(", ")),
                esc(i.milestone.as_deref().unwrap_or(""))
            )
        })
        .collect();
    let states =
        [("opened", "Open"), ("closed", "Closed"), ("all", "All")].map(|(v, l)| (v.to_string(), l.to_string()));
    let mut label_opts = vec![(String::new(), "Any label".to_string())];
    label_opts.extend(p.labels.iter().map(|l| (l.name.clone(), l.name.clone())));
    let open = p.issues.iter().filter(|i| !i.closed).count();
    let here = format!(
        "{}/-/issues?state={}&search={}&label_name={}",
        base(p),
        encode_form(state),
        encode_form(&search),
        encode_form(&label)
    );
    format!(
        r#"<h1>Issues</h1><p>Open: <output aria-label="Open issues">{open}</output> · Closed: <output aria-label="Closed issues">{}</output> · Matching: <output aria-label="Matching issues">{}</output></p>
<p><a href="{}/-/issues/new" class="btn-confirm">New issue</a></p>
<form method="get" action="{}/-/issues" class="filters"><div><label for="issue-search">Search</label><input type="search" id="issue-search" name="search" value="{}" placeholder="Search or filter results…"></div><div><label for="issue-state">State</label><select id="issue-state" name="state">{}</select></div><div><label for="issue-label">Label</label><select id="issue-label" name="label_name">{}</select></div><button type="submit">Apply</button></form>
<table><thead><tr><th>ID</th><th>Title</th><th>Assignee</th><th>Labels</th><th>Milestone</th></tr></thead><tbody>{rows}</tbody></table>{}"#,
        p.issues.len() - open,
        matching.len(),
        esc(&base(p)),
        esc(&base(p)),
        esc(&search),
        options(&states, state),
        options(&label_opts, &label),
        pager(&here, req.page_number(), pages)
    )
}

fn member_options(world: &World, p: &Project, selected: &str, none: &str) -> String {
    let mut items = vec![(String::new(), none.to_string())];
    items.extend(p.members.iter().map(|m| (m.username.clone(), world.data.display(&m.username))));
    options(&items, selected)
}

fn new_issue(world: &World, p: &Project) -> String {
    let mut labels = vec![(String::new(), "None".to_string())];
    labels.extend(p.labels.iter().map(|l| (l.name.clone(), l.name.clone())));
    let mut milestones = vec![(String::new(), "None".to_string())];
    milestones.extend(p.milestones.iter().filter(|m| !m.closed).map(|m| (m.title.clone(), m.title.clone())));
    format!(
        r#"<h1>New issue</h1><form method="post" action="{}/-/issues"><label for="issue_title">Title (required)</label><input type="text" id="issue_title" name="title" required><label for="issue_description">Description</label><textarea id="issue_description" name="description"></textarea>
<label for="issue_assignee">Assignee</label><select id="issue_assignee" name="assignee">{}</select><label for="issue_label">Label</label><select id="issue_label" name="label">{}</select><label for="issue_milestone">Milestone</label><select id="issue_milestone" name="milestone">{}</select>
<p><button type="submit" class="primary">Create issue</button> <a href="{}/-/issues">Cancel</a></p></form>"#,
        esc(&base(p)),
        member_options(world, p, "", "Unassigned"),
        options(&labels, ""),
        options(&milestones, ""),
        esc(&base(p))
    )
}

fn state_badge(id: &str, open: bool, open_text: &str, closed_text: &str) -> String {
    let (class, text) = if open { ("state-open", open_text) } else { ("state-closed", closed_text) };
    format!(r#"<span id="{id}" class="badge {class}">{text}</span>"#)
}

fn post_button(action: &str, label: &str, menuitem: bool) -> String {
    let role = if menuitem { r#" role="menuitem""# } else { "" };
    format!(
        r#"<form method="post" action="{}"><button type="submit"{role}>{}</button></form>"#,
        esc(action),
        esc(label)
    )
}

fn issue_page(world: &World, version: Version, p: &Project, i: &Issue) -> String {
    let url = format!("{}/-/issues/{}", base(p), i.iid);
    let close_label = if i.closed { "Reopen issue" } else { "Close issue" };
    let notif_label = if i.notifications { "Turn off notifications" } else { "Turn on notifications" };
    let lock_label = if i.locked { "Unlock issue" } else { "Lock issue" };
    let reference = format!("{}#{}", p.path, i.iid);
    let header_actions = match version {
        Version::V1 => post_button(&format!("{url}/toggle_state"), close_label, false),
        Version::V2 => format!(
            r#"<div class="menu-wrap"><button type="button" aria-haspopup="menu" aria-expanded="false" aria-controls="issue-actions" aria-label="Issue actions">⋮</button><ul role="menu" id="issue-actions" hidden><li role="none">{}</li><li role="none">{}</li><li role="none"><button type="button" role="menuitem" data-reference="{}">Copy reference</button></li><li role="none">{}</li></ul></div>"#,
            post_button(&format!("{url}/toggle_state"), close_label, true),
            post_button(&format!("{url}/toggle_notifications"), notif_label, true),
            esc(&reference),
            post_button(&format!("{url}/toggle_lock"), lock_label, true)
        ),
    };
    let sidebar_extra = match version {
        Version::V1 => format!(
            r#"<h3>Notifications</h3>{}<h3>Reference</h3><p>{}</p><button type="button" data-reference="{}">Copy reference</button><h3>Lock issue</h3>{}"#,
            post_button(&format!("{url}/toggle_notifications"), notif_label, false),
            esc(&reference),
            esc(&reference),
            post_button(&format!("{url}/toggle_lock"), lock_label, false)
        ),
        Version::V2 => String::new(),
    };
    let mut labels = vec![(String::new(), "Choose a label".to_string())];
    labels.extend(p.labels.iter().filter(|l| !i.labels.contains(&l.name)).map(|l| (l.name.clone(), l.name.clone())));
    let mut milestones = vec![(String::new(), "No milestone".to_string())];
    milestones.extend(p.milestones.iter().map(|m| (m.title.clone(), m.title.clone())));
    let comments: String = i
        .comments
        .iter()
        .map(|c| format!(r#"<li><strong>{}</strong> <p>{}</p></li>"#, who(world, &c.author), esc(&c.text)))
        .collect();
    format!(
        r#"<nav aria-label="Breadcrumbs"><a href="{b}">{pname}</a> / <a href="{b}/-/issues">Issues</a> / #{iid}</nav>
<div class="issue-header" style="display:flex;gap:12px;align-items:center">{badge}<span>Issue created {created} by {author}</span><span style="flex:1"></span>{header_actions}</div>
<div class="issue-layout"><div class="issue-main"><h1>{title}</h1><div class="description">{description}</div>
<p id="notifications-status">{notif_status}</p><p id="lock-status">{lock_status}</p>
<h2>Activity</h2><ul class="notes">{comments}</ul>
<form method="post" action="{url}/notes"><label for="note-body">Comment</label><textarea id="note-body" name="note"></textarea><p><button type="submit" class="primary">Comment</button></p></form></div>
<aside class="issue-sidebar" aria-label="Issue details"><dl class="details"><dt id="d-assignee">Assignee</dt><dd aria-labelledby="d-assignee">{assignee}</dd><dt id="d-labels">Labels</dt><dd id="sidebar-labels" aria-labelledby="d-labels">{label_text}</dd><dt id="d-milestone">Milestone</dt><dd id="sidebar-milestone" aria-labelledby="d-milestone">{milestone}</dd><dt id="d-due">Due date</dt><dd id="sidebar-due-date" aria-labelledby="d-due">{due}</dd></dl>
<form method="post" action="{url}/assignee"><label for="assign-select">Assign to</label><select id="assign-select" name="assignee">{assignees}</select><button type="submit">Save assignee</button></form>
<form method="post" action="{url}/labels"><label for="label-select">Add label</label><select id="label-select" name="label">{label_opts}</select><button type="submit">Add label</button></form>
<form method="post" action="{url}/milestone"><label for="milestone-select">Set milestone</label><select id="milestone-select" name="milestone">{milestone_opts}</select><button type="submit">Save milestone</button></form>
<form method="post" action="{url}/due_date"><label for="due-date-input">Due date</label><input type="text" id="due-date-input" name="due_date" placeholder="YYYY-MM-DD" value="{due_value}"><button type="submit">Save due date</button></form>
{sidebar_extra}</aside></div>"#,
        b = esc(&base(p)),
        pname = esc(&p.name),
        iid = i.iid,
        badge = state_badge("issue-state", !i.closed, "Open", "Closed"),
        created = esc(&i.created),
        author = who(world, &i.author),
        title = esc(&i.title),
        description = esc(&i.description),
        notif_status = if i.notifications {
            "You are receiving notifications for this issue."
        } else {
            "Notifications are turned off for this issue."
        },
        lock_status = if i.locked {
            "This issue is locked. Only project members can comment."
        } else {
            "Discussion is open to everyone."
        },
        url = esc(&url),
        assignee = i.assignee.as_deref().map(|a| who(world, a)).unwrap_or_else(|| "None".into()),
        label_text = if i.labels.is_empty() { "None".to_string() } else { esc(&i.labels.join(", ")) },
        milestone = esc(i.milestone.as_deref().unwrap_or("None")),
        due = esc(i.due_date.as_deref().unwrap_or("None")),
        assignees = member_options(world, p, i.assignee.as_deref().unwrap_or(""), "Unassigned"),
        label_opts = options(&labels, ""),
        milestone_opts = options(&milestones, i.milestone.as_deref().unwrap_or("")),
        due_value = esc(i.due_date.as_deref().unwrap_or("")),
    )
}

fn mr_list(world: &World, req: &Req<'_>, p: &Project) -> String {
    let state = req.q("state").unwrap_or("opened");
    let search = req.q("search").unwrap_or("").trim().to_lowercase();
    let matching: Vec<&MergeRequest> = p
        .merge_requests
        .iter()
        .filter(|m| state == "all" || m.state == state)
        .filter(|m| search.is_empty() || m.title.to_lowercase().contains(&search))
        .collect();
    let (shown, pages) = paginate(&matching, req.page_number(), PER_PAGE);
    let rows: String = shown
        .iter()
        .map(|m| {
            format!(
                r#"<tr><td>!{}</td><td><a href="{}/-/merge_requests/{}">{}</a></td><td>{}</td><td>{}</td></tr>"#,
                m.iid,
                esc(&base(p)),
                m.iid,
                esc(&m.title),
                who(world, &m.author),
                esc(&m.state)
            )
        })
        .collect();
    let tabs: String = [("opened", "Open"), ("merged", "Merged"), ("closed", "Closed"), ("all", "All")]
        .iter()
        .map(|(v, l)| {
            let cur = current(*v == state);
            format!(r#"<a href="{}/-/merge_requests?state={v}"{cur}>{l}</a>"#, esc(&base(p)))
        })
        .collect();
    let open = p.merge_requests.iter().filter(|m| m.state == "opened").count();
    format!(
        r#"<h1>Merge requests</h1><p>Open: <output aria-label="Open merge requests">{open}</output></p><nav aria-label="Merge request states" class="tabs">{tabs}</nav>
<form method="get" action="{b}/-/merge_requests" class="filters"><input type="hidden" name="state" value="{state}"><label for="mr-search">Search</label><input type="search" id="mr-search" name="search" value="{search}"><button type="submit">Apply</button></form>
<table><thead><tr><th>ID</th><th>Title</th><th>Author</th><th>State</th></tr></thead><tbody>{rows}</tbody></table>{pager}"#,
        b = esc(&base(p)),
        state = esc(state),
        search = esc(&search),
        pager = pager(&format!("{}/-/merge_requests?state={}", base(p), encode_form(state)), req.page_number(), pages)
    )
}

fn mr_page(world: &World, version: Version, p: &Project, m: &MergeRequest, tab: &str) -> String {
    let url = format!("{}/-/merge_requests/{}", base(p), m.iid);
    let notif_label = if m.notifications { "Turn off notifications" } else { "Turn on notifications" };
    let lock_label = if m.locked { "Unlock merge request" } else { "Lock merge request" };
    let reference = format!("{}!{}", p.path, m.iid);
    let tabs: String = [
        ("overview", "Overview", ""),
        ("commits", "Commits", "/commits"),
        ("pipelines", "Pipelines", "/pipelines"),
        ("diffs", "Changes", "/diffs"),
    ]
    .iter()
    .map(|(k, l, suffix)| {
        let cur = current(*k == tab);
        format!(r#"<a href="{}{suffix}"{cur}>{l}</a>"#, esc(&url))
    })
    .collect();
    let menu = match version {
        Version::V1 => String::new(),
        Version::V2 => format!(
            r#"<div class="menu-wrap"><button type="button" aria-haspopup="menu" aria-expanded="false" aria-controls="mr-actions" aria-label="Merge request actions">⋮</button><ul role="menu" id="mr-actions" hidden><li role="none">{}</li><li role="none">{}</li><li role="none"><button type="button" role="menuitem" data-reference="{}">Copy reference</button></li></ul></div>"#,
            post_button(&format!("{url}/toggle_notifications"), notif_label, true),
            post_button(&format!("{url}/toggle_lock"), lock_label, true),
            esc(&reference)
        ),
    };
    let show_sidebar = version == Version::V1 || tab == "overview";
    let sidebar = if show_sidebar {
        let extra = match version {
            Version::V1 => format!(
                r#"<h3>Notifications</h3>{}<h3>Reference</h3><p>{}</p><button type="button" data-reference="{}">Copy reference</button><h3>Lock merge request</h3>{}"#,
                post_button(&format!("{url}/toggle_notifications"), notif_label, false),
                esc(&reference),
                esc(&reference),
                post_button(&format!("{url}/toggle_lock"), lock_label, false)
            ),
            Version::V2 => String::new(),
        };
        format!(
            r#"<aside class="issue-sidebar" aria-label="Merge request details"><dl class="details"><dt id="m-assignee">Assignee</dt><dd aria-labelledby="m-assignee">{}</dd><dt id="m-labels">Labels</dt><dd aria-labelledby="m-labels">{}</dd></dl>{extra}</aside>"#,
            m.assignee.as_deref().map(|a| who(world, a)).unwrap_or_else(|| "None".into()),
            esc(&m.labels.join(", "))
        )
    } else {
        String::new()
    };
    let content = match tab {
        "commits" => {
            format!("<ul>{}</ul>", m.commits.iter().map(|c| format!("<li>{}</li>", esc(c))).collect::<String>())
        }
        "pipelines" => format!("<p>Pipeline #{} passed for {}.</p>", 5000 + m.iid, esc(&m.source_branch)),
        "diffs" => format!(
            "<table><thead><tr><th>File</th><th>Added</th><th>Removed</th></tr></thead><tbody>{}</tbody></table>",
            m.changes
                .iter()
                .map(|(f, a, d)| format!("<tr><td>{}</td><td>+{a}</td><td>-{d}</td></tr>", esc(f)))
                .collect::<String>()
        ),
        _ => {
            let comments: String = m
                .comments
                .iter()
                .map(|c| format!(r#"<li><strong>{}</strong> <p>{}</p></li>"#, who(world, &c.author), esc(&c.text)))
                .collect();
            let merge = if m.state == "opened" {
                format!(
                    "{}{}",
                    post_button(&format!("{url}/merge"), "Merge", false),
                    post_button(&format!("{url}/close"), "Close merge request", false)
                )
            } else {
                String::new()
            };
            format!(
                r#"<div class="description">{}</div>{merge}<h2>Activity</h2><ul class="notes">{comments}</ul><form method="post" action="{}/notes"><label for="note-body">Comment</label><textarea id="note-body" name="note"></textarea><p><button type="submit" class="primary">Comment</button></p></form>"#,
                esc(&m.description),
                esc(&url)
            )
        }
    };
    let state_text = match m.state.as_str() {
        "merged" => "Merged",
        "closed" => "Closed",
        _ => "Open",
    };
    format!(
        r#"<nav aria-label="Breadcrumbs"><a href="{b}">{pname}</a> / <a href="{b}/-/merge_requests">Merge requests</a> / !{iid}</nav>
<div style="display:flex;gap:12px;align-items:center"><span id="mr-state" class="badge">{state_text}</span><span style="flex:1"></span>{menu}</div><h1>{title}</h1>
<dl class="details"><dt id="m-source">Source branch</dt><dd aria-labelledby="m-source">{source}</dd><dt id="m-target">Target branch</dt><dd aria-labelledby="m-target">{target}</dd><dt id="m-author">Author</dt><dd aria-labelledby="m-author">{author}</dd><dt id="m-created">Created</dt><dd aria-labelledby="m-created">{created}</dd></dl>
<p id="notifications-status">{notif}</p><p id="discussion-lock">{lock}</p>
<nav aria-label="Merge request tabs" class="tabs">{tabs}</nav><div class="issue-layout"><div class="issue-main">{content}</div>{sidebar}</div>"#,
        b = esc(&base(p)),
        pname = esc(&p.name),
        iid = m.iid,
        title = esc(&m.title),
        source = esc(&m.source_branch),
        target = esc(&m.target_branch),
        author = who(world, &m.author),
        created = esc(&m.created),
        notif = if m.notifications {
            "You are receiving notifications for this merge request."
        } else {
            "Notifications are turned off for this merge request."
        },
        lock = if m.locked {
            "This merge request is locked. Only project members can comment."
        } else {
            "Discussion is open to everyone."
        },
    )
}

fn milestones_list(req: &Req<'_>, p: &Project) -> String {
    let state = req.q("state").unwrap_or("opened");
    let rows: String = p
        .milestones
        .iter()
        .filter(|m| match state {
            "closed" => m.closed,
            "all" => true,
            _ => !m.closed,
        })
        .map(|m| {
            format!(
                r#"<tr><td><a href="{}/-/milestones/{}">{}</a></td><td>{}</td><td>{}</td></tr>"#,
                esc(&base(p)),
                m.id,
                esc(&m.title),
                esc(&m.due_date),
                if m.closed { "Closed" } else { "Open" }
            )
        })
        .collect();
    let tabs: String = [("opened", "Open"), ("closed", "Closed"), ("all", "All")]
        .iter()
        .map(|(v, l)| {
            let cur = current(*v == state);
            format!(r#"<a href="{}/-/milestones?state={v}"{cur}>{l}</a>"#, esc(&base(p)))
        })
        .collect();
    format!(
        r#"<h1>Milestones</h1><p><a href="{}/-/milestones/new" class="btn-confirm">New milestone</a></p><nav aria-label="Milestone states" class="tabs">{tabs}</nav><table><thead><tr><th>Title</th><th>Due date</th><th>State</th></tr></thead><tbody>{rows}</tbody></table>"#,
        esc(&base(p))
    )
}

fn milestone_page(p: &Project, m: &Milestone) -> String {
    let issues: Vec<&Issue> = p.issues.iter().filter(|i| i.milestone.as_deref() == Some(&m.title)).collect();
    let items: String = issues
        .iter()
        .map(|i| format!(r#"<li><a href="{}/-/issues/{}">{}</a></li>"#, esc(&base(p)), i.iid, esc(&i.title)))
        .collect();
    format!(
        r#"<nav aria-label="Breadcrumbs"><a href="{b}/-/milestones">Milestones</a> / {t}</nav><h1>{t}</h1><p>{d}</p><dl class="details"><dt id="ms-start">Start date</dt><dd aria-labelledby="ms-start">{s}</dd><dt id="ms-due">Due date</dt><dd aria-labelledby="ms-due">{due}</dd><dt id="ms-state">State</dt><dd aria-labelledby="ms-state">{st}</dd><dt id="ms-issues">Issues</dt><dd aria-labelledby="ms-issues">{n}</dd></dl><h2>Issues</h2><ul>{items}</ul>"#,
        b = esc(&base(p)),
        t = esc(&m.title),
        d = esc(&m.description),
        s = esc(&m.start_date),
        due = esc(&m.due_date),
        st = if m.closed { "Closed" } else { "Open" },
        n = issues.len()
    )
}

fn new_milestone(p: &Project) -> String {
    format!(
        r#"<h1>New milestone</h1><form method="post" action="{}/-/milestones"><label for="milestone_title">Title</label><input type="text" id="milestone_title" name="title"><label for="milestone_start_date">Start date</label><input type="text" id="milestone_start_date" name="start_date" placeholder="YYYY-MM-DD"><label for="milestone_due_date">Due date</label><input type="text" id="milestone_due_date" name="due_date" placeholder="YYYY-MM-DD"><label for="milestone_description">Description</label><textarea id="milestone_description" name="description"></textarea><p><button type="submit" class="primary">Create milestone</button></p></form>"#,
        esc(&base(p))
    )
}

fn labels_list(req: &Req<'_>, p: &Project) -> String {
    let search = req.q("search").unwrap_or("").to_lowercase();
    let rows: String = p
        .labels
        .iter()
        .filter(|l| search.is_empty() || l.name.to_lowercase().contains(&search))
        .map(|l| {
            format!(
                r#"<li><span class="badge" style="background:{};color:#fff">{}</span> {} · <a href="{}/-/issues?label_name={}">Issues with {}</a></li>"#,
                esc(&l.color),
                esc(&l.name),
                esc(&l.description),
                esc(&base(p)),
                encode_form(&l.name),
                esc(&l.name)
            )
        })
        .collect();
    format!(
        r#"<h1>Labels</h1><p><a href="{b}/-/labels/new" class="btn-confirm">New label</a></p><form method="get" action="{b}/-/labels" class="filters"><label for="label-search">Filter labels</label><input type="search" id="label-search" name="search" value="{}"><button type="submit">Filter</button></form><ul id="labels-list">{rows}</ul>"#,
        esc(&search),
        b = esc(&base(p))
    )
}

fn new_label(p: &Project) -> String {
    format!(
        r##"<h1>New label</h1><form method="post" action="{}/-/labels"><label for="label_title">Title</label><input type="text" id="label_title" name="title"><label for="label_description">Description</label><input type="text" id="label_description" name="description"><label for="label_color">Background color</label><input type="text" id="label_color" name="color" value="#6699cc"><p><button type="submit" class="primary">Create label</button></p></form>"##,
        esc(&base(p))
    )
}

fn members(world: &World, p: &Project) -> String {
    let rows: String = p
        .members
        .iter()
        .map(|m| {
            format!(
                "<tr><td>{} @{}</td><td>{}</td><td>{}</td></tr>",
                who(world, &m.username),
                esc(&m.username),
                esc(&m.role),
                if m.expires.is_empty() { "No expiration".to_string() } else { esc(&m.expires) }
            )
        })
        .collect();
    let roles: Vec<(String, String)> = ROLES.iter().map(|r| (r.to_string(), r.to_string())).collect();
    format!(
        r#"<h1>Project members</h1><p>Members: <output aria-label="Members count">{}</output></p><p><button type="button" data-opens="invite-members-dialog" class="btn-confirm">Invite members</button></p>
<div role="dialog" aria-modal="true" id="invite-members-dialog" aria-labelledby="invite-title" hidden><h2 id="invite-title">Invite members</h2><form method="post" action="{}/-/project_members"><label for="invite-user">Username or email address</label><input type="text" id="invite-user" name="user"><label for="invite-role">Select a role</label><select id="invite-role" name="role">{}</select><label for="invite-expires">Access expiration date (optional)</label><input type="text" id="invite-expires" name="expires" placeholder="YYYY-MM-DD"><p><button type="button" data-closes>Cancel</button> <button type="submit" class="primary">Invite</button></p></form></div>
<table id="members-table"><thead><tr><th>Account</th><th>Max role</th><th>Expiration</th></tr></thead><tbody>{rows}</tbody></table>"#,
        p.members.len(),
        esc(&base(p)),
        options(&roles, "Guest")
    )
}

/// Every state-changing form of a project.
pub(super) fn post(world: &mut World, req: &Req<'_>, path: &str, rest: &[&str]) -> Option<Response> {
    let f = |k: &str| field(&req.form, k).unwrap_or("").trim().to_string();
    let session = req.session.clone();
    let users: Vec<String> = world.data.users.iter().map(|u| u.username.clone()).collect();
    let p = world.data.project_mut(path)?;
    let b = format!("/{}", p.path);
    let (location, flash) = match rest {
        ["edit"] => {
            if !f("name").is_empty() {
                p.name = f("name");
            }
            p.description = f("description");
            (format!("{b}/edit"), format!("Project '{}' was successfully updated.", p.name))
        }
        ["-", "issues"] => {
            let title = f("title");
            if title.is_empty() {
                (format!("{b}/-/issues/new"), "!Title can't be blank".to_string())
            } else {
                let iid = p.issues.len() + 1;
                let opt = |s: String| if s.is_empty() { None } else { Some(s) };
                p.issues.push(Issue {
                    iid,
                    title,
                    description: f("description"),
                    author: ME.into(),
                    assignee: opt(f("assignee")),
                    labels: opt(f("label")).into_iter().collect(),
                    milestone: opt(f("milestone")),
                    due_date: None,
                    closed: false,
                    locked: false,
                    notifications: true,
                    comments: Vec::new(),
                    created: "2026-11-29".into(),
                });
                (format!("{b}/-/issues/{iid}"), "Issue was created.".to_string())
            }
        }
        ["-", "issues", iid, action] => {
            let i = p.issues.iter_mut().find(|i| i.iid.to_string() == *iid)?;
            let here = format!("{b}/-/issues/{iid}");
            let flash = match *action {
                "toggle_state" => {
                    i.closed = !i.closed;
                    if i.closed { "Issue closed." } else { "Issue reopened." }.to_string()
                }
                "toggle_notifications" => {
                    i.notifications = !i.notifications;
                    if i.notifications { "Notifications turned on." } else { "Notifications turned off." }.to_string()
                }
                "toggle_lock" => {
                    i.locked = !i.locked;
                    if i.locked { "Issue locked." } else { "Issue unlocked." }.to_string()
                }
                "notes" => {
                    let text = f("note");
                    if text.is_empty() {
                        "!Comment can't be blank".to_string()
                    } else {
                        i.comments.push(Comment { author: ME.into(), text });
                        "Comment added.".to_string()
                    }
                }
                "assignee" => {
                    let a = f("assignee");
                    i.assignee = if a.is_empty() { None } else { Some(a) };
                    "Assignee updated.".to_string()
                }
                "labels" => {
                    let l = f("label");
                    if !l.is_empty() && !i.labels.contains(&l) {
                        i.labels.push(l);
                    }
                    "Labels updated.".to_string()
                }
                "milestone" => {
                    let m = f("milestone");
                    i.milestone = if m.is_empty() { None } else { Some(m) };
                    "Milestone updated.".to_string()
                }
                "due_date" => {
                    let d = f("due_date");
                    i.due_date = if d.is_empty() { None } else { Some(d) };
                    "Due date updated.".to_string()
                }
                _ => return None,
            };
            (here, flash)
        }
        ["-", "merge_requests", iid, action] => {
            let m = p.merge_requests.iter_mut().find(|m| m.iid.to_string() == *iid)?;
            let here = format!("{b}/-/merge_requests/{iid}");
            let flash = match *action {
                "toggle_notifications" => {
                    m.notifications = !m.notifications;
                    if m.notifications { "Notifications turned on." } else { "Notifications turned off." }.to_string()
                }
                "toggle_lock" => {
                    m.locked = !m.locked;
                    if m.locked { "Merge request locked." } else { "Merge request unlocked." }.to_string()
                }
                "merge" if m.state == "opened" => {
                    m.state = "merged".into();
                    "Merge request merged.".to_string()
                }
                "close" if m.state == "opened" => {
                    m.state = "closed".into();
                    "Merge request closed.".to_string()
                }
                "notes" => {
                    let text = f("note");
                    if text.is_empty() {
                        "!Comment can't be blank".to_string()
                    } else {
                        m.comments.push(Comment { author: ME.into(), text });
                        "Comment added.".to_string()
                    }
                }
                _ => return None,
            };
            (here, flash)
        }
        ["-", "milestones"] => {
            let title = f("title");
            if title.is_empty() || p.milestones.iter().any(|m| m.title == title) {
                (format!("{b}/-/milestones/new"), "!Title is blank or already taken".to_string())
            } else {
                let id = 10_000 + p.id * 100 + p.milestones.len();
                p.milestones.push(Milestone {
                    id,
                    title,
                    description: f("description"),
                    start_date: f("start_date"),
                    due_date: f("due_date"),
                    closed: false,
                });
                (format!("{b}/-/milestones/{id}"), "Milestone was created.".to_string())
            }
        }
        ["-", "labels"] => {
            let title = f("title");
            if title.is_empty() || p.labels.iter().any(|l| l.name == title) {
                (format!("{b}/-/labels/new"), "!Title is blank or already taken".to_string())
            } else {
                p.labels.push(Label { name: title, color: f("color"), description: f("description") });
                (format!("{b}/-/labels"), "Label was created.".to_string())
            }
        }
        ["-", "project_members"] => {
            let user = f("user");
            let user = user.trim_start_matches('@').to_string();
            let role = f("role");
            if !users.contains(&user) {
                (format!("{b}/-/project_members"), format!("!User '{user}' was not found"))
            } else if p.members.iter().any(|m| m.username == user) {
                (format!("{b}/-/project_members"), format!("!{user} is already a member"))
            } else {
                let role = if ROLES.contains(&role.as_str()) { role } else { "Guest".to_string() };
                p.members.push(super::data::Member { username: user.clone(), role, expires: f("expires") });
                (format!("{b}/-/project_members"), format!("{user} was invited."))
            }
        }
        _ => return None,
    };
    world.flash(&session, &flash);
    Some(redirect(&location))
}
