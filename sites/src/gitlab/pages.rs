//! Routing, the dashboard ("Your work"), search, user profiles and profile
//! settings, and the read-only project pages (overview, repository,
//! contributors, graph, CI/CD, wiki, settings, activity, boards).

use axum::http::{Method, StatusCode};
use axum::response::Response;
use skillshift_common::Version;

use super::data::{Project, ME};
use super::layout::pager;
use super::layout::{self, Ctx};
use super::{who, work, Req, World};
use crate::kit::paging::paginate;
use crate::kit::text::esc;
use crate::kit::url::{encode_form, field};
use crate::kit::web::{page, redirect};

pub(super) const PER_PAGE: usize = 20;

/// Dispatches a signed-in request; `None` is a 404.
pub(super) fn route(world: &mut World, req: &Req<'_>, flash: Option<String>) -> Option<Response> {
    let s: Vec<&str> = req.segments.iter().map(String::as_str).collect();
    let get = req.method == Method::GET;
    match s.as_slice() {
        [] if get => Some(dashboard_projects(world, req, flash)),
        ["dashboard", what] if get => dashboard(world, req, flash, what),
        ["search"] if get => Some(search(world, req, flash)),
        ["projects", "new"] if get => Some(simple(
            req,
            None,
            "",
            flash,
            "New project",
            "<h1>Create new project</h1><p>Project creation is disabled on this instance.</p>",
        )),
        ["-", "profile"] => match req.version {
            Version::V1 => Some(profile_settings(world, req, flash, "/-/profile")),
            // 16.7 moved user settings under /-/user_settings and redirects the old paths.
            Version::V2 => Some(redirect("/-/user_settings/profile")),
        },
        ["-", "user_settings", "profile"] if req.version == Version::V2 => {
            Some(profile_settings(world, req, flash, "/-/user_settings/profile"))
        }
        [username] if get => world.data.user(username).is_some().then(|| profile(world, req, flash, username)),
        [ns, name, rest @ ..] => {
            let path = format!("{ns}/{name}");
            world.data.project(&path)?;
            project_route(world, req, flash, &path, rest)
        }
        _ => None,
    }
}

fn project_route(
    world: &mut World,
    req: &Req<'_>,
    flash: Option<String>,
    path: &str,
    rest: &[&str],
) -> Option<Response> {
    let get = req.method == Method::GET;
    if !get {
        return work::post(world, req, path, rest);
    }
    let p = world.data.project(path)?.clone();
    let html = |active: &str, title: &str, body: String| {
        let ctx = Ctx { version: req.version, project: Some(&p), active, flash: flash.clone() };
        page(StatusCode::OK, layout::shell(&ctx, title, &body))
    };
    Some(match rest {
        [] => html("overview", &p.name, overview(world, &p)),
        ["edit"] => html("settings_general", "General settings", settings_general(&p)),
        ["-", "issues", ..] | ["-", "merge_requests", ..] | ["-", "milestones", ..] | ["-", "labels", ..]
        | ["-", "project_members"] => {
            return work::get(world, req, flash, &p, &rest[1..]);
        }
        ["-", "activity"] => html("activity", "Activity", activity(world, &p)),
        ["-", "tree", _] => html("files", "Files", tree(&p)),
        ["-", "blob", _, file @ ..] => {
            let name = file.join("/");
            let (_, content) = p.files.iter().find(|(f, _)| *f == name)?;
            html(
                "files",
                &name,
                format!(
                    r#"<nav aria-label="Breadcrumbs"><a href="/{}/-/tree/main">{}</a> / {}</nav><h1>{}</h1><pre aria-label="File content">{}</pre>"#,
                    esc(&p.path),
                    esc(&p.name),
                    esc(&name),
                    esc(&name),
                    esc(content)
                ),
            )
        }
        ["-", "commits", _] => html("commits", "Commits", commits(world, &p)),
        ["-", "branches"] => html("branches", "Branches", list_page("Branches", &p.branches, "Branch")),
        ["-", "tags"] => html("tags", "Tags", list_page("Tags", &p.tags, "Tag")),
        ["-", "graphs", _] => html("contributors", "Contributors", contributors(world, &p)),
        ["-", "network", _] => html("graph", "Graph", graph(&p)),
        ["-", "compare"] => html("compare", "Compare", compare(&p)),
        ["-", "boards"] => html("boards", "Issue boards", boards(world, &p)),
        ["-", "wikis", _] => html("wiki", "Wiki", format!("<h1>Home</h1><p>Welcome to the {} wiki. Start with the README.</p>", esc(&p.name))),
        ["-", "pipelines"] => html("pipelines", "Pipelines", pipelines(&p)),
        ["-", "ci", "editor"] => html(
            "editor",
            "Pipeline editor",
            r#"<h1>Pipeline editor</h1><label for="ci-yaml">.gitlab-ci.yml</label><textarea id="ci-yaml" name="content">stages:
  - test
test:
  script: make test</textarea><p><button type="button">Commit changes</button></p>"#
                .to_string(),
        ),
        ["-", "jobs"] => html("jobs", "Jobs", jobs(&p)),
        ["-", "pipeline_schedules"] => html(
            "schedules",
            "Pipeline schedules",
            r#"<h1>Pipeline schedules</h1><table><thead><tr><th>Description</th><th>Target</th><th>Next run</th></tr></thead><tbody><tr><td>Nightly build</td><td>main</td><td>in 6 hours</td></tr></tbody></table><p><a href="?new=1">New schedule</a></p>"#
                .to_string(),
        ),
        ["-", "value_stream_analytics"] => html("value_stream", "Value stream analytics", "<h1>Value stream analytics</h1><p>Lead time: 4 days. Cycle time: 2 days.</p>".into()),
        ["-", "settings", "integrations"] => html("settings_integrations", "Integrations", "<h1>Integrations</h1><p>No integrations are active.</p>".into()),
        ["-", "hooks"] => html("settings_webhooks", "Webhooks", r#"<h1>Webhooks</h1><label for="hook-url">URL</label><input type="text" id="hook-url" name="url"><p><button type="button">Add webhook</button></p>"#.into()),
        ["-", "settings", "repository"] => html("settings_repository", "Repository settings", "<h1>Repository settings</h1><h2>Protected branches</h2><p>main</p>".into()),
        ["-", "settings", "ci_cd"] => html("settings_cicd", "CI/CD settings", "<h1>CI/CD settings</h1><h2>Variables</h2><p>No variables.</p>".into()),
        _ => return None,
    })
}

fn simple(
    req: &Req<'_>,
    project: Option<&Project>,
    active: &str,
    flash: Option<String>,
    title: &str,
    body: &str,
) -> Response {
    let ctx = Ctx { version: req.version, project, active, flash };
    page(StatusCode::OK, layout::shell(&ctx, title, body))
}

fn dashboard_projects(world: &World, req: &Req<'_>, flash: Option<String>) -> Response {
    let search = req.q("search").unwrap_or("").to_lowercase();
    let matching: Vec<&Project> =
        world.data.projects.iter().filter(|p| search.is_empty() || p.path.to_lowercase().contains(&search)).collect();
    let (shown, pages) = paginate(&matching, req.page_number(), PER_PAGE);
    let mut rows = String::new();
    for p in shown {
        rows.push_str(&format!(
            r#"<tr><td><a href="/{}">{}</a></td><td>{}</td><td>{}</td></tr>"#,
            esc(&p.path),
            esc(&p.path),
            esc(&p.description),
            p.stars
        ));
    }
    let base = format!("/dashboard/projects?search={}", encode_form(&search));
    let body = format!(
        r#"<h1>Projects</h1><form method="get" action="/dashboard/projects" class="filters"><label for="filter-projects">Filter by name</label><input type="search" id="filter-projects" name="search" value="{}"><button type="submit">Filter</button></form>
<p>Projects: <output aria-label="Projects count">{}</output></p><table><thead><tr><th>Project</th><th>Description</th><th>Stars</th></tr></thead><tbody>{rows}</tbody></table>{}"#,
        esc(&search),
        matching.len(),
        pager(&base, req.page_number(), pages)
    );
    simple(req, None, "projects", flash, "Projects", &body)
}

fn dashboard(world: &World, req: &Req<'_>, flash: Option<String>, what: &str) -> Option<Response> {
    let (active, title, body) = match what {
        "projects" => return Some(dashboard_projects(world, req, flash)),
        "groups" => {
            let mut groups: Vec<&str> = world.data.projects.iter().filter_map(|p| p.path.split('/').next()).collect();
            groups.sort();
            groups.dedup();
            let items: String = groups.iter().map(|g| format!("<li>{}</li>", esc(g))).collect();
            ("groups", "Groups", format!("<h1>Groups</h1><ul>{items}</ul>"))
        }
        "issues" | "todos" => {
            let mut rows = String::new();
            let mut n = 0;
            for p in &world.data.projects {
                for i in p.issues.iter().filter(|i| !i.closed && i.assignee.as_deref() == Some(ME)) {
                    n += 1;
                    rows.push_str(&format!(
                        r#"<li><a href="/{}/-/issues/{}">{}</a> · {}#{}</li>"#,
                        esc(&p.path),
                        i.iid,
                        esc(&i.title),
                        esc(&p.path),
                        i.iid
                    ));
                }
            }
            if what == "issues" {
                (
                    "dash_issues",
                    "Issues",
                    format!(
                        r#"<h1>Issues assigned to you</h1><p><output aria-label="Assigned issues count">{n}</output> open</p><ul>{rows}</ul>"#
                    ),
                )
            } else {
                (
                    "todos",
                    "To-Do List",
                    format!(
                        r#"<h1>To-Do List</h1><p><output aria-label="To-do items count">{n}</output> pending</p><ul>{rows}</ul>"#
                    ),
                )
            }
        }
        "merge_requests" => {
            let mut rows = String::new();
            for p in &world.data.projects {
                for m in p.merge_requests.iter().filter(|m| m.state == "opened" && m.assignee.as_deref() == Some(ME)) {
                    rows.push_str(&format!(
                        r#"<li><a href="/{}/-/merge_requests/{}">{}</a></li>"#,
                        esc(&p.path),
                        m.iid,
                        esc(&m.title)
                    ));
                }
            }
            ("dash_mrs", "Merge requests", format!("<h1>Merge requests assigned to you</h1><ul>{rows}</ul>"))
        }
        "milestones" => {
            let mut rows = String::new();
            for p in &world.data.projects {
                for m in p.milestones.iter().filter(|m| !m.closed) {
                    rows.push_str(&format!(
                        r#"<tr><td><a href="/{}/-/milestones/{}">{}</a></td><td>{}</td><td>{}</td></tr>"#,
                        esc(&p.path),
                        m.id,
                        esc(&m.title),
                        esc(&p.path),
                        esc(&m.due_date)
                    ));
                }
            }
            ("dash_milestones", "Milestones", format!("<h1>Milestones</h1><table><thead><tr><th>Milestone</th><th>Project</th><th>Due date</th></tr></thead><tbody>{rows}</tbody></table>"))
        }
        "snippets" => ("snippets", "Snippets", "<h1>Snippets</h1><p>You have no snippets yet.</p>".to_string()),
        "activity" => {
            ("dash_activity", "Activity", format!("<h1>Activity</h1>{}", activity(world, &world.data.projects[0])))
        }
        _ => return None,
    };
    Some(simple(req, None, active, flash, title, &body))
}

fn search(world: &World, req: &Req<'_>, flash: Option<String>) -> Response {
    let term = req.q("search").unwrap_or("").trim().to_string();
    let t = term.to_lowercase();
    let mut body = format!(
        r#"<h1>Search results</h1><form method="get" action="/search" role="search" class="filters"><input type="search" name="search" aria-label="Search term" value="{}"><button type="submit">Search</button></form>"#,
        esc(&term)
    );
    if !t.is_empty() {
        let projects: Vec<&Project> =
            world.data.projects.iter().filter(|p| p.path.to_lowercase().contains(&t)).collect();
        let users: Vec<_> = world
            .data
            .users
            .iter()
            .filter(|u| u.username.to_lowercase().contains(&t) || u.name.to_lowercase().contains(&t))
            .collect();
        let mut issues = Vec::new();
        for p in &world.data.projects {
            for i in &p.issues {
                if i.title.to_lowercase().contains(&t) {
                    issues.push((p, i));
                }
            }
        }
        body.push_str(&format!(
            r#"<p>Results: <output aria-label="Results count">{}</output></p><section aria-labelledby="h-projects"><h2 id="h-projects">Projects</h2><ul>"#,
            projects.len() + users.len() + issues.len()
        ));
        for p in &projects {
            body.push_str(&format!(r#"<li><a href="/{}">{}</a></li>"#, esc(&p.path), esc(&p.path)));
        }
        body.push_str(r#"</ul></section><section aria-labelledby="h-users"><h2 id="h-users">Users</h2><ul>"#);
        for u in &users {
            body.push_str(&format!(
                r#"<li><a href="/{}">{}</a> @{}</li>"#,
                esc(&u.username),
                esc(&u.name),
                esc(&u.username)
            ));
        }
        body.push_str(r#"</ul></section><section aria-labelledby="h-issues"><h2 id="h-issues">Issues</h2><ul>"#);
        for (p, i) in issues.iter().take(20) {
            body.push_str(&format!(
                r#"<li><a href="/{}/-/issues/{}">{}</a> {}</li>"#,
                esc(&p.path),
                i.iid,
                esc(&i.title),
                esc(&p.path)
            ));
        }
        body.push_str("</ul></section>");
    }
    simple(req, None, "", flash, "Search", &body)
}

fn profile(world: &World, req: &Req<'_>, flash: Option<String>, username: &str) -> Response {
    let Some(u) = world.data.user(username) else { return super::not_found(req.version) };
    let projects: String = world
        .data
        .projects
        .iter()
        .filter(|p| p.members.iter().any(|m| m.username == username))
        .map(|p| format!(r#"<li><a href="/{}">{}</a></li>"#, esc(&p.path), esc(&p.path)))
        .collect();
    let body = format!(
        r#"<h1>{}</h1><dl class="details"><dt id="p-username">Username</dt><dd aria-labelledby="p-username">@{}</dd><dt id="p-email">Email</dt><dd aria-labelledby="p-email">{}</dd><dt id="p-bio">Bio</dt><dd aria-labelledby="p-bio">{}</dd><dt id="p-location">Location</dt><dd aria-labelledby="p-location">{}</dd><dt id="p-job">Job title</dt><dd aria-labelledby="p-job">{}</dd></dl><h2>Projects</h2><ul>{projects}</ul>"#,
        esc(&u.name),
        esc(&u.username),
        esc(&u.email),
        esc(&u.bio),
        esc(&u.location),
        esc(&u.job_title)
    );
    simple(req, None, "", flash, &u.name, &body)
}

fn profile_settings(world: &mut World, req: &Req<'_>, flash: Option<String>, here: &str) -> Response {
    if req.method == Method::POST {
        if let Some(u) = world.data.users.iter_mut().find(|u| u.username == ME) {
            for (key, slot) in [
                ("name", &mut u.name),
                ("bio", &mut u.bio),
                ("location", &mut u.location),
                ("job_title", &mut u.job_title),
            ] {
                if let Some(v) = field(&req.form, key) {
                    *slot = v.trim().to_string();
                }
            }
        }
        world.flash(&req.session, "Profile was successfully updated");
        return redirect(here);
    }
    let Some(u) = world.data.user(ME) else { return super::not_found(req.version) };
    let body = format!(
        r#"<h1>Edit profile</h1><form method="post" action="{here}"><label for="user_name">Full name</label><input type="text" id="user_name" name="name" value="{}"><label for="user_bio">Bio</label><textarea id="user_bio" name="bio">{}</textarea><label for="user_location">Location</label><input type="text" id="user_location" name="location" value="{}"><label for="user_job_title">Job title</label><input type="text" id="user_job_title" name="job_title" value="{}"><p><button type="submit" class="primary">Update profile settings</button></p></form>"#,
        esc(&u.name),
        esc(&u.bio),
        esc(&u.location),
        esc(&u.job_title)
    );
    simple(req, None, "", flash, "Edit profile", &body)
}

fn overview(world: &World, p: &Project) -> String {
    let files: String = p
        .files
        .iter()
        .map(|(f, _)| format!(r#"<li><a href="/{}/-/blob/main/{}">{}</a></li>"#, esc(&p.path), esc(f), esc(f)))
        .collect();
    let readme = p.files.iter().find(|(f, _)| f == "README.md").map(|(_, c)| c.clone()).unwrap_or_default();
    format!(
        r#"<h1>{}</h1><p>{}</p><dl class="details"><dt id="o-id">Project ID</dt><dd aria-labelledby="o-id">{}</dd><dt id="o-stars">Stars</dt><dd aria-labelledby="o-stars">{}</dd><dt id="o-forks">Forks</dt><dd aria-labelledby="o-forks">{}</dd><dt id="o-commits">Commits</dt><dd aria-labelledby="o-commits">{}</dd><dt id="o-branches">Branches</dt><dd aria-labelledby="o-branches">{}</dd><dt id="o-tags">Tags</dt><dd aria-labelledby="o-tags">{}</dd><dt id="o-owner">Owner</dt><dd aria-labelledby="o-owner">{}</dd></dl><h2>Files</h2><ul>{files}</ul><h2>README.md</h2><pre>{}</pre>"#,
        esc(&p.name),
        esc(&p.description),
        p.id + 1,
        p.stars,
        p.forks,
        p.commits,
        p.branches.len(),
        p.tags.len(),
        who(world, ME),
        esc(&readme)
    )
}

fn activity(world: &World, p: &Project) -> String {
    let mut items = String::new();
    for i in p.issues.iter().rev().take(15) {
        let verb = if i.closed { "closed" } else { "opened" };
        items.push_str(&format!(
            r#"<li>{} {verb} issue <a href="/{}/-/issues/{}">#{} {}</a></li>"#,
            who(world, &i.author),
            esc(&p.path),
            i.iid,
            i.iid,
            esc(&i.title)
        ));
    }
    format!("<h1>Activity</h1><ul>{items}</ul>")
}

fn tree(p: &Project) -> String {
    let rows: String = p
        .files
        .iter()
        .map(|(f, c)| {
            format!(
                r#"<tr><td><a href="/{}/-/blob/main/{}">{}</a></td><td>{} lines</td></tr>"#,
                esc(&p.path),
                esc(f),
                esc(f),
                c.lines().count()
            )
        })
        .collect();
    format!(
        r#"<h1>{} / main</h1><table><thead><tr><th>Name</th><th>Size</th></tr></thead><tbody>{rows}</tbody></table>"#,
        esc(&p.name)
    )
}

fn commits(world: &World, p: &Project) -> String {
    let mut rows = String::new();
    for m in &p.merge_requests {
        for c in &m.commits {
            rows.push_str(&format!("<li>{} — {}</li>", esc(c), who(world, &m.author)));
        }
    }
    format!(r#"<h1>Commits</h1><p>Total: <output aria-label="Commits count">{}</output></p><ul>{rows}</ul>"#, p.commits)
}

fn list_page(title: &str, items: &[String], what: &str) -> String {
    let rows: String = items.iter().map(|b| format!("<tr><td>{}</td></tr>", esc(b))).collect();
    format!(r#"<h1>{title}</h1><table><thead><tr><th>{what}</th></tr></thead><tbody>{rows}</tbody></table>"#)
}

fn contributors(world: &World, p: &Project) -> String {
    let top = p.contributors.first().map(|(u, _)| who(world, u)).unwrap_or_default();
    let rows: String =
        p.contributors.iter().map(|(u, n)| format!("<tr><td>{}</td><td>{n}</td></tr>", who(world, u))).collect();
    format!(
        r#"<h1>Contributors</h1><dl class="details"><dt id="c-top">Top contributor</dt><dd aria-labelledby="c-top">{top}</dd></dl><table><thead><tr><th>Contributor</th><th>Commits</th></tr></thead><tbody>{rows}</tbody></table>"#
    )
}

fn graph(p: &Project) -> String {
    let rows: String = p.branches.iter().map(|b| format!("<li>{} ← main</li>", esc(b))).collect();
    format!(r#"<h1>Graph</h1><p>Branch graph of {}</p><ul aria-label="Branches">{rows}</ul>"#, esc(&p.name))
}

fn compare(p: &Project) -> String {
    let options: String = p.branches.iter().map(|b| format!("<option>{}</option>", esc(b))).collect();
    format!(
        r#"<h1>Compare revisions</h1><form method="get" class="filters"><label for="from">Source</label><select id="from" name="from">{options}</select><label for="to">Target</label><select id="to" name="to">{options}</select><button type="submit">Compare</button></form>"#
    )
}

fn boards(world: &World, p: &Project) -> String {
    let card = |i: &super::data::Issue| {
        format!(r#"<li><a href="/{}/-/issues/{}">{}</a></li>"#, esc(&p.path), i.iid, esc(&i.title))
    };
    let open: String = p.issues.iter().filter(|i| !i.closed).take(12).map(card).collect();
    let closed: String = p.issues.iter().filter(|i| i.closed).take(12).map(card).collect();
    let _ = world;
    format!(
        r#"<h1>Development board</h1><div style="display:flex;gap:16px"><section aria-labelledby="b-open"><h2 id="b-open">Open</h2><ul>{open}</ul></section><section aria-labelledby="b-closed"><h2 id="b-closed">Closed</h2><ul>{closed}</ul></section></div>"#
    )
}

fn pipelines(p: &Project) -> String {
    let rows: String = p
        .pipelines
        .iter()
        .map(|(id, status, r)| format!("<tr><td>#{id}</td><td>{}</td><td>{}</td></tr>", esc(status), esc(r)))
        .collect();
    format!(
        r#"<h1>Pipelines</h1><table><thead><tr><th>Pipeline</th><th>Status</th><th>Ref</th></tr></thead><tbody>{rows}</tbody></table>"#
    )
}

fn jobs(p: &Project) -> String {
    let rows: String = p
        .pipelines
        .iter()
        .map(|(id, status, _)| format!("<tr><td>test #{}</td><td>{}</td></tr>", id * 3, esc(status)))
        .collect();
    format!(r#"<h1>Jobs</h1><table><thead><tr><th>Job</th><th>Status</th></tr></thead><tbody>{rows}</tbody></table>"#)
}

fn settings_general(p: &Project) -> String {
    format!(
        r#"<h1>General settings</h1><form method="post" action="/{}/edit"><label for="project_name">Project name</label><input type="text" id="project_name" name="name" value="{}"><label for="project_description">Project description (optional)</label><textarea id="project_description" name="description">{}</textarea><p><button type="submit" class="primary">Save changes</button></p></form>"#,
        esc(&p.path),
        esc(&p.name),
        esc(&p.description)
    )
}
