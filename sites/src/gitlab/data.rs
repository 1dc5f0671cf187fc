//! The seeded GitLab instance: users, projects, labels, milestones, issues,
//! merge requests, members and repository files, drawn from a fixed-seed
//! xorshift so every build of every version renders the same data. Both
//! versions share this seed; only the pages differ.

use crate::kit::rng::Rng;

pub const SEED: u64 = 0x5EED_617A_B001;
/// The signed-in user of every task.
pub const ME: &str = "byteblaze";
pub const PASSWORD: &str = "hello1234";
pub const ROLES: &[&str] = &["Guest", "Reporter", "Developer", "Maintainer", "Owner"];

#[derive(Debug, Clone)]
pub struct User {
    pub username: String,
    pub name: String,
    pub email: String,
    pub bio: String,
    pub location: String,
    pub job_title: String,
}

#[derive(Debug, Clone)]
pub struct Project {
    pub id: usize,
    pub path: String,
    pub name: String,
    pub description: String,
    pub stars: u32,
    pub forks: u32,
    pub commits: u32,
    pub branches: Vec<String>,
    pub tags: Vec<String>,
    pub files: Vec<(String, String)>,
    /// (username, commits), most commits first.
    pub contributors: Vec<(String, u32)>,
    pub labels: Vec<Label>,
    pub milestones: Vec<Milestone>,
    pub members: Vec<Member>,
    pub issues: Vec<Issue>,
    pub merge_requests: Vec<MergeRequest>,
    pub pipelines: Vec<(u32, String, String)>,
}

#[derive(Debug, Clone)]
pub struct Label {
    pub name: String,
    pub color: String,
    pub description: String,
}

#[derive(Debug, Clone)]
pub struct Milestone {
    pub id: usize,
    pub title: String,
    pub description: String,
    pub start_date: String,
    pub due_date: String,
    pub closed: bool,
}

#[derive(Debug, Clone)]
pub struct Member {
    pub username: String,
    pub role: String,
    pub expires: String,
}

#[derive(Debug, Clone)]
pub struct Comment {
    pub author: String,
    pub text: String,
}

#[derive(Debug, Clone)]
pub struct Issue {
    pub iid: usize,
    pub title: String,
    pub description: String,
    pub author: String,
    pub assignee: Option<String>,
    pub labels: Vec<String>,
    pub milestone: Option<String>,
    pub due_date: Option<String>,
    pub closed: bool,
    pub locked: bool,
    pub notifications: bool,
    pub comments: Vec<Comment>,
    pub created: String,
}

#[derive(Debug, Clone)]
pub struct MergeRequest {
    pub iid: usize,
    pub title: String,
    pub description: String,
    pub author: String,
    pub assignee: Option<String>,
    pub source_branch: String,
    pub target_branch: String,
    /// "opened", "merged" or "closed".
    pub state: String,
    pub locked: bool,
    pub notifications: bool,
    pub labels: Vec<String>,
    pub comments: Vec<Comment>,
    pub commits: Vec<String>,
    pub changes: Vec<(String, u32, u32)>,
    pub created: String,
}

/// The whole instance.
#[derive(Debug, Clone)]
pub struct Seed {
    pub users: Vec<User>,
    pub projects: Vec<Project>,
}

const FIRST: &[&str] = &[
    "Ann", "Bruno", "Chen", "Dana", "Emeka", "Farah", "Gita", "Hugo", "Ines", "Jonas", "Kaito", "Lena", "Mateo",
    "Nadia", "Omar", "Priya", "Quinn", "Rosa", "Sven", "Tara", "Umar", "Vera", "Wei", "Ximena", "Yusuf", "Zoe", "Aiko",
    "Boris", "Carmen", "Dmitri", "Elif", "Femi", "Greta", "Hamid", "Isla", "Jamal",
];
const LAST: &[&str] = &[
    "Lee", "Okafor", "Silva", "Novak", "Haddad", "Kowalski", "Tanaka", "Moreau", "Rossi", "Jensen", "Ivanova",
    "Mensah", "Garcia", "Nakamura", "Fischer", "Patel", "Schmidt", "Dubois", "Andersen", "Costa", "Yilmaz", "Kim",
    "Walsh", "Berg",
];
const CITIES: &[&str] =
    &["Lisbon", "Nairobi", "Toronto", "Berlin", "Osaka", "Lagos", "Austin", "Oslo", "Pune", "Lyon", "Porto", "Seoul"];
const JOBS: &[&str] = &[
    "Backend engineer",
    "Frontend engineer",
    "SRE",
    "Product designer",
    "Engineering manager",
    "Data engineer",
    "Technical writer",
    "Security engineer",
    "QA engineer",
];
const NAMESPACES: &[&str] = &["a11yproject", "primer", "kilo-org", "openbench", "byteblaze", "datalab", "webcraft"];
const PROJECT_NAMES: &[&str] = &[
    "a11yproject.com",
    "design",
    "css",
    "octicons",
    "kilo-editor",
    "kilo-plugins",
    "bench-runner",
    "dotfiles",
    "pipelines",
    "notebook",
    "web-vitals",
    "forms",
    "router",
    "icons",
    "docs",
    "cli",
    "api-gateway",
    "sdk-python",
    "sdk-js",
    "dashboards",
    "infra",
    "terraform-modules",
    "chatbot",
    "scheduler",
    "search-ui",
    "image-tools",
    "markdown-lint",
    "release-tools",
    "blog",
    "handbook",
    "metrics",
    "auth-service",
    "mobile-app",
    "style-guide",
    "playground",
    "emoji-picker",
];
const COMPONENTS: &[&str] = &[
    "navigation",
    "search results",
    "login form",
    "color contrast",
    "keyboard focus",
    "footer links",
    "sidebar",
    "date picker",
    "file upload",
    "dark mode",
    "pagination",
    "tooltip",
    "modal dialog",
    "markdown preview",
    "API client",
    "cache layer",
    "CI config",
    "release notes",
    "error page",
    "settings page",
    "user avatar",
    "notifications",
    "table sorting",
    "locale switcher",
];
const PROBLEMS: &[&str] = &[
    "is broken on mobile",
    "fails with a timeout",
    "ignores screen readers",
    "shows a stale count",
    "crashes on empty input",
    "needs better docs",
    "is slow on large projects",
    "loses focus after submit",
    "renders twice",
    "has a typo",
    "leaks memory",
    "misses translations",
];
const VERBS: &[&str] = &["Add", "Fix", "Refactor", "Improve", "Remove", "Update", "Document", "Test"];
const LABELS: &[(&str, &str, &str)] = &[
    ("bug", "#d9534f", "Something is not working"),
    ("feature", "#5cb85c", "A new capability"),
    ("documentation", "#428bca", "Docs and guides"),
    ("accessibility", "#8e44ad", "WCAG and assistive tech"),
    ("performance", "#f0ad4e", "Speed and memory"),
    ("good first issue", "#16a085", "Small and well scoped"),
    ("help wanted", "#e67e22", "Contributions welcome"),
    ("security", "#c0392b", "Vulnerabilities and hardening"),
    ("design", "#ff69b4", "UX and visual design"),
    ("needs review", "#7f8c8d", "Waiting for a reviewer"),
    ("backend", "#34495e", "Server side"),
    ("frontend", "#2ecc71", "Client side"),
];
const FILE_NAMES: &[&str] = &[
    "README.md",
    "LICENSE",
    "CONTRIBUTING.md",
    "package.json",
    "Cargo.toml",
    ".gitlab-ci.yml",
    "src/main.rs",
    "src/lib.rs",
    "docs/index.md",
    "Makefile",
    "CHANGELOG.md",
    ".editorconfig",
];

fn date(rng: &mut Rng, year: usize) -> String {
    format!("{year}-{:02}-{:02}", rng.range(1, 12), rng.range(1, 28))
}

impl Seed {
    /// The instance every reset restores.
    pub fn generate() -> Seed {
        let mut rng = Rng::raw(SEED);
        let mut users = vec![User {
            username: ME.to_string(),
            name: "Byte Blaze".to_string(),
            email: "byteblaze@example.com".to_string(),
            bio: "Maintainer of things that build other things.".to_string(),
            location: "Pittsburgh".to_string(),
            job_title: "Staff engineer".to_string(),
        }];
        let mut seen = std::collections::HashSet::new();
        while users.len() < 90 {
            let first = *rng.pick(FIRST);
            let last = *rng.pick(LAST);
            let username = format!("{}{}", first.to_lowercase(), &last.to_lowercase()[..3.min(last.len())]);
            if !seen.insert(username.clone()) {
                continue;
            }
            let email = format!("{}.{}@example.com", first.to_lowercase(), last.to_lowercase());
            users.push(User {
                username,
                name: format!("{first} {last}"),
                email,
                bio: format!("Works on {} and {}.", rng.pick(COMPONENTS), rng.pick(COMPONENTS)),
                location: rng.pick(CITIES).to_string(),
                job_title: rng.pick(JOBS).to_string(),
            });
        }
        let mut projects = Vec::new();
        let mut milestone_id = 1;
        for (id, name) in PROJECT_NAMES.iter().enumerate() {
            let ns = NAMESPACES[id % NAMESPACES.len()];
            let path = format!("{ns}/{name}");
            let description = format!("{} for the {} team: {}.", capitalise(name), ns, rng.pick(COMPONENTS));
            // Members: the signed-in user plus a few others (never the first 10 users after ME,
            // which stay available for invitation tasks in every project).
            let mut members = vec![Member { username: ME.to_string(), role: "Owner".into(), expires: String::new() }];
            let n_members = rng.range(3, 11);
            while members.len() < n_members {
                let u = &users[rng.range(11, users.len() - 1)].username;
                if !members.iter().any(|m| &m.username == u) {
                    let role = ROLES[rng.range(0, 3)].to_string();
                    let expires = if rng.chance(20) { date(&mut rng, 2027) } else { String::new() };
                    members.push(Member { username: u.clone(), role, expires });
                }
            }
            let labels: Vec<Label> = {
                let n = rng.range(6, LABELS.len());
                let start = rng.below(LABELS.len());
                (0..n)
                    .map(|k| {
                        let (name, color, desc) = LABELS[(start + k) % LABELS.len()];
                        Label { name: name.into(), color: color.into(), description: desc.into() }
                    })
                    .collect()
            };
            let n_milestones = rng.range(2, 5);
            let major = rng.range(1, 4);
            let milestones: Vec<Milestone> = (0..n_milestones)
                .map(|k| {
                    let m = Milestone {
                        id: milestone_id,
                        title: format!("v{major}.{k}"),
                        description: format!("Release {major}.{k}: {}", rng.pick(COMPONENTS)),
                        start_date: format!("2026-{:02}-01", 1 + k * 2),
                        due_date: format!("2026-{:02}-{:02}", 2 + k * 2, rng.range(10, 28)),
                        closed: k + 1 < n_milestones && rng.chance(40),
                    };
                    milestone_id += 1;
                    m
                })
                .collect();
            let member_names: Vec<String> = members.iter().map(|m| m.username.clone()).collect();
            let n_issues = rng.range(8, 34);
            let issues: Vec<Issue> = (1..=n_issues)
                .map(|iid| {
                    let comp = rng.pick(COMPONENTS);
                    let title = format!("{} {}", capitalise(comp), rng.pick(PROBLEMS));
                    let labels: Vec<String> =
                        (0..rng.range(0, 2)).map(|_| rng.pick(&labels).name.clone()).fold(Vec::new(), |mut acc, l| {
                            if !acc.contains(&l) {
                                acc.push(l);
                            }
                            acc
                        });
                    let n_comments = rng.range(0, 3);
                    Issue {
                        iid,
                        title: format!("{title} (#{iid})"),
                        description: format!(
                            "Steps to reproduce: open the {comp} and try again. Expected it to work; it {}.",
                            rng.pick(PROBLEMS)
                        ),
                        author: rng.pick(&member_names).clone(),
                        assignee: if rng.chance(75) { Some(rng.pick(&member_names).clone()) } else { None },
                        labels,
                        milestone: if rng.chance(60) { Some(rng.pick(&milestones).title.clone()) } else { None },
                        due_date: if rng.chance(40) { Some(date(&mut rng, 2026)) } else { None },
                        closed: rng.chance(35),
                        locked: false,
                        notifications: true,
                        comments: (0..n_comments)
                            .map(|_| Comment {
                                author: rng.pick(&member_names).clone(),
                                text: format!("I can reproduce this with the {}.", rng.pick(COMPONENTS)),
                            })
                            .collect(),
                        created: date(&mut rng, 2025),
                    }
                })
                .collect();
            let branches: Vec<String> = std::iter::once("main".to_string())
                .chain((0..rng.range(3, 9)).map(|k| {
                    format!(
                        "{}-{}-{k}",
                        rng.pick(&["feature", "fix", "chore", "docs"]),
                        rng.pick(COMPONENTS).replace(' ', "-")
                    )
                }))
                .collect();
            let n_mrs = rng.range(3, 14);
            let merge_requests: Vec<MergeRequest> = (1..=n_mrs)
                .map(|iid| {
                    let comp = rng.pick(COMPONENTS);
                    let state = match rng.below(10) {
                        0..=5 => "opened",
                        6..=8 => "merged",
                        _ => "closed",
                    };
                    let source = if branches.len() > 1 {
                        branches[1 + (iid - 1) % (branches.len() - 1)].clone()
                    } else {
                        format!("feature-{iid}")
                    };
                    MergeRequest {
                        iid,
                        title: format!("{} {comp} (!{iid})", rng.pick(VERBS)),
                        description: format!("This change touches the {comp}. Closes #{}.", rng.range(1, n_issues)),
                        author: rng.pick(&member_names).clone(),
                        assignee: if rng.chance(70) { Some(rng.pick(&member_names).clone()) } else { None },
                        source_branch: source,
                        target_branch: "main".into(),
                        state: state.into(),
                        locked: false,
                        notifications: true,
                        labels: vec![rng.pick(&labels).name.clone()],
                        comments: Vec::new(),
                        commits: (0..rng.range(1, 6))
                            .map(|k| format!("{} {comp} part {}", rng.pick(VERBS), k + 1))
                            .collect(),
                        changes: (0..rng.range(1, 4))
                            .map(|_| {
                                (rng.pick(FILE_NAMES).to_string(), rng.range(1, 120) as u32, rng.range(0, 60) as u32)
                            })
                            .collect(),
                        created: date(&mut rng, 2026),
                    }
                })
                .collect();
            let mut contributors: Vec<(String, u32)> = Vec::new();
            for m in &member_names {
                if rng.chance(80) || contributors.is_empty() {
                    contributors.push((m.clone(), rng.range(1, 400) as u32));
                }
            }
            contributors.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
            contributors.dedup_by(|a, b| a.1 == b.1);
            let commits = contributors.iter().map(|c| c.1).sum();
            let n_files = rng.range(5, FILE_NAMES.len());
            let files = FILE_NAMES[..n_files]
                .iter()
                .map(|f| {
                    let body = match *f {
                        "README.md" => {
                            format!("# {name}\n\n{description}\n\nRun `make test` before sending a merge request.\n")
                        }
                        "LICENSE" => "MIT License\n\nPermission is hereby granted, free of charge...\n".to_string(),
                        _ => format!("// {f} of {path}\n// {}\n", rng.pick(COMPONENTS)),
                    };
                    (f.to_string(), body)
                })
                .collect();
            projects.push(Project {
                id,
                path,
                name: name.to_string(),
                description,
                stars: rng.range(0, 900) as u32,
                forks: rng.range(0, 120) as u32,
                commits,
                tags: (0..rng.range(1, 6)).map(|k| format!("v{major}.{k}.0")).collect(),
                branches,
                files,
                contributors,
                labels,
                milestones,
                members,
                issues,
                merge_requests,
                pipelines: (0..rng.range(4, 16))
                    .map(|k| {
                        let status = rng.pick(&["passed", "failed", "running", "canceled"]).to_string();
                        (1000 + (id * 40 + k) as u32, status, rng.pick(&["main", "develop"]).to_string())
                    })
                    .collect(),
            });
        }
        Seed { users, projects }
    }

    pub fn user(&self, username: &str) -> Option<&User> {
        self.users.iter().find(|u| u.username == username)
    }

    pub fn project(&self, path: &str) -> Option<&Project> {
        self.projects.iter().find(|p| p.path == path)
    }

    pub fn project_mut(&mut self, path: &str) -> Option<&mut Project> {
        self.projects.iter_mut().find(|p| p.path == path)
    }

    /// The display name of a username (the username itself when unknown).
    pub fn display(&self, username: &str) -> String {
        self.user(username).map(|u| u.name.clone()).unwrap_or_else(|| username.to_string())
    }
}

pub fn capitalise(text: &str) -> String {
    let mut chars = text.chars();
    match chars.next() {
        Some(c) => c.to_uppercase().collect::<String>() + chars.as_str(),
        None => String::new(),
    }
}
