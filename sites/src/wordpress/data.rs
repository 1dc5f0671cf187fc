//! The WordPress fixture's seeded content: users, categories, tags, posts,
//! pages, comments and options, generated from a fixed seed with the in-code
//! PRNG (hundreds of posts and comments, as on a small real blog).

use std::collections::BTreeMap;

use crate::kit::rng::Rng;
use crate::kit::text::{contains_ci, date_of, slug};

pub const ROLES: &[(&str, &str)] = &[
    ("administrator", "Administrator"),
    ("editor", "Editor"),
    ("author", "Author"),
    ("contributor", "Contributor"),
    ("subscriber", "Subscriber"),
];

#[derive(Debug, Clone, PartialEq)]
pub struct User {
    pub id: u32,
    pub login: String,
    pub first: String,
    pub last: String,
    pub email: String,
    pub role: String,
}

impl User {
    pub fn display(&self) -> String {
        format!("{} {}", self.first, self.last)
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct Term {
    pub id: u32,
    pub name: String,
    pub slug: String,
    pub parent: Option<u32>,
    pub description: String,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Post {
    pub id: u32,
    /// `post` or `page`.
    pub kind: String,
    pub title: String,
    pub slug: String,
    pub content: String,
    /// `publish`, `draft`, `pending` or `trash`.
    pub status: String,
    pub author: u32,
    pub date: String,
    pub categories: Vec<u32>,
    pub tags: Vec<u32>,
}

impl Post {
    /// The pretty permalink, `/YYYY/MM/DD/slug/` for posts and `/slug/` for pages.
    pub fn permalink(&self) -> String {
        if self.kind == "page" {
            format!("/{}/", self.slug)
        } else {
            format!("/{}/{}/{}/{}/", &self.date[..4], &self.date[5..7], &self.date[8..10], self.slug)
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct Comment {
    pub id: u32,
    pub post: u32,
    pub author: String,
    pub email: String,
    pub content: String,
    /// `approved`, `pending`, `spam` or `trash`.
    pub status: String,
    pub date: String,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Blog {
    pub users: Vec<User>,
    pub categories: Vec<Term>,
    pub tags: Vec<Term>,
    pub posts: Vec<Post>,
    pub comments: Vec<Comment>,
    pub options: BTreeMap<String, String>,
}

const STARTS: &[&str] = &[
    "A Guide to",
    "Notes on",
    "Why I Love",
    "Lessons from",
    "The Future of",
    "Getting Started with",
    "Ten Tips for",
    "Thoughts on",
    "Rethinking",
    "Inside",
];
const TOPICS: &[(&str, usize)] = &[
    ("Sourdough Baking", 1),
    ("Urban Gardening", 2),
    ("Remote Work", 3),
    ("Trail Running", 4),
    ("Film Photography", 5),
    ("Home Espresso", 1),
    ("Bird Watching", 6),
    ("Rust Programming", 3),
    ("Minimalist Travel", 7),
    ("Jazz Piano", 8),
    ("Beekeeping", 2),
    ("Watercolor Painting", 8),
    ("Rock Climbing", 4),
    ("Chess Openings", 9),
    ("Vintage Cycling", 4),
    ("Container Gardening", 2),
    ("Night Sky Photography", 5),
    ("Fermented Foods", 1),
    ("Open Source", 3),
    ("Public Libraries", 10),
    ("Language Learning", 10),
    ("Woodworking", 11),
    ("Cold Water Swimming", 4),
    ("Board Games", 9),
];
const CATEGORIES: &[&str] = &[
    "Uncategorized",
    "Food",
    "Garden",
    "Technology",
    "Outdoors",
    "Photography",
    "Nature",
    "Travel",
    "Arts",
    "Games",
    "Learning",
    "Crafts",
];
const TAGS: &[&str] = &[
    "beginner",
    "howto",
    "weekend",
    "review",
    "gear",
    "recipe",
    "checklist",
    "interview",
    "opinion",
    "budget",
    "family",
    "winter",
    "summer",
    "community",
    "tools",
    "books",
    "history",
    "science",
    "video",
    "podcast",
];
const FIRST: &[&str] = &[
    "Ada", "Bruno", "Celia", "Dmitri", "Elena", "Felix", "Greta", "Hassan", "Irene", "Jonas", "Keiko", "Lars", "Maya",
    "Nikolai", "Odette", "Pedro", "Quinn", "Rosa", "Stefan", "Tara",
];
const LAST: &[&str] = &[
    "Abbott",
    "Becker",
    "Castillo",
    "Dubois",
    "Eriksen",
    "Fischer",
    "Gallo",
    "Hansen",
    "Ivanova",
    "Jensen",
    "Kowal",
    "Lindqvist",
    "Moreau",
    "Novak",
];
const PAGES: &[&str] = &[
    "About",
    "Contact",
    "Privacy Policy",
    "Sample Page",
    "Archives",
    "Newsletter",
    "Reading List",
    "Events",
    "Press Kit",
    "Colophon",
    "Now",
    "Uses",
    "Support the Blog",
    "Guest Posts",
    "Photo Gallery",
    "Recipes Index",
    "Gardening Calendar",
    "Workshop Schedule",
    "Code of Conduct",
    "Terms of Service",
    "Cookie Policy",
    "Accessibility",
    "Sponsors",
    "Team",
    "Careers",
    "FAQ",
    "Media Mentions",
    "Speaking",
    "Projects",
    "Links",
];
const COMMENT_OPENERS: &[&str] = &[
    "Great read",
    "Thanks for sharing",
    "I tried this",
    "Interesting take",
    "Bookmarked",
    "Could you expand on this",
    "Not sure I agree",
    "This helped a lot",
];

impl Blog {
    /// The seeded blog (the same on every call).
    pub fn seed() -> Blog {
        let mut rng = Rng::scrambled(0x5750_4f53);
        let mut users = vec![User {
            id: 1,
            login: "admin".into(),
            first: "Site".into(),
            last: "Admin".into(),
            email: "admin@example.com".into(),
            role: "administrator".into(),
        }];
        for i in 0..59usize {
            let (f, l) = (FIRST[i % FIRST.len()], LAST[(i * 7 + i / FIRST.len()) % LAST.len()]);
            let role = match i % 10 {
                0 => "editor",
                1..=3 => "author",
                4..=5 => "contributor",
                _ => "subscriber",
            };
            let login = format!("{}{}", f.to_lowercase(), &l.to_lowercase()[..3]);
            users.push(User {
                id: i as u32 + 2,
                login: format!("{login}{}", i / FIRST.len()),
                first: f.into(),
                last: l.into(),
                email: format!("{}.{}@example.org", f.to_lowercase(), l.to_lowercase()),
                role: role.into(),
            });
        }
        let writers: Vec<u32> = users
            .iter()
            .filter(|u| matches!(u.role.as_str(), "administrator" | "editor" | "author"))
            .map(|u| u.id)
            .collect();
        let categories: Vec<Term> = CATEGORIES
            .iter()
            .enumerate()
            .map(|(i, n)| Term {
                id: i as u32 + 1,
                name: n.to_string(),
                slug: slug(n),
                parent: None,
                description: if i == 0 { String::new() } else { format!("Posts about {}.", n.to_lowercase()) },
            })
            .collect();
        let tags: Vec<Term> = TAGS
            .iter()
            .enumerate()
            .map(|(i, n)| Term {
                id: 100 + i as u32,
                name: n.to_string(),
                slug: slug(n),
                parent: None,
                description: String::new(),
            })
            .collect();
        let mut posts = vec![Post {
            id: 1,
            kind: "post".into(),
            title: "Hello world!".into(),
            slug: "hello-world".into(),
            content: "Welcome to WordPress. This is your first post. Edit or delete it, then start writing!".into(),
            status: "publish".into(),
            author: 1,
            date: "2023-01-02".into(),
            categories: vec![1],
            tags: vec![],
        }];
        let mut combos: Vec<(usize, usize)> =
            (0..STARTS.len()).flat_map(|s| (0..TOPICS.len()).map(move |t| (s, t))).collect();
        rng.shuffle(&mut combos);
        for (k, &(s, t)) in combos.iter().enumerate() {
            let title = format!("{} {}", STARTS[s], TOPICS[t].0);
            let status = match rng.below(20) {
                0 => "draft",
                1 => "pending",
                2 => "trash",
                _ => "publish",
            };
            let mut tag_ids = vec![100 + rng.below(TAGS.len()) as u32];
            if rng.chance(50) {
                let t2 = 100 + rng.below(TAGS.len()) as u32;
                if !tag_ids.contains(&t2) {
                    tag_ids.push(t2);
                }
            }
            posts.push(Post {
                id: k as u32 + 2,
                kind: "post".into(),
                slug: slug(&title),
                content: format!(
                    "Every season brings something new to learn about {}. Here is what worked for us, what did not, and what we would try next time.",
                    TOPICS[t].0.to_lowercase()
                ),
                status: status.into(),
                author: writers[rng.below(writers.len())],
                date: date_of(19_360 + (k as i64 * 600) / combos.len() as i64),
                categories: vec![TOPICS[t].1 as u32 + 1],
                tags: tag_ids,
                title,
            });
        }
        let first_page = posts.len() as u32 + 1;
        for (i, p) in PAGES.iter().enumerate() {
            posts.push(Post {
                id: first_page + i as u32,
                kind: "page".into(),
                title: p.to_string(),
                slug: slug(p),
                content: format!("This is the {} page of the blog.", p.to_lowercase()),
                status: if i % 9 == 8 { "draft" } else { "publish" }.into(),
                author: 1,
                date: date_of(19_350 + i as i64),
                categories: vec![],
                tags: vec![],
            });
        }
        let published: Vec<u32> =
            posts.iter().filter(|p| p.kind == "post" && p.status == "publish").map(|p| p.id).collect();
        let comments = (0..420usize)
            .map(|i| {
                let (f, l) = (FIRST[rng.below(FIRST.len())], LAST[rng.below(LAST.len())]);
                let status = match rng.below(10) {
                    0 | 1 => "pending",
                    2 => "spam",
                    _ => "approved",
                };
                Comment {
                    id: i as u32 + 1,
                    post: published[rng.below(published.len())],
                    author: format!("{f} {l}"),
                    email: format!("{}@mail.example", f.to_lowercase()),
                    content: format!(
                        "{} (comment {}). {}",
                        COMMENT_OPENERS[rng.below(COMMENT_OPENERS.len())],
                        i + 1,
                        "Looking forward to the next post."
                    ),
                    status: status.into(),
                    date: date_of(19_400 + (i as i64 * 560) / 420),
                }
            })
            .collect();
        let options = [
            ("blogname", "Skillshift Journal"),
            ("blogdescription", "Notes from a small editorial team"),
            ("admin_email", "admin@example.com"),
            ("siteurl", "http://localhost"),
            ("users_can_register", "0"),
            ("default_role", "subscriber"),
            ("posts_per_page", "10"),
            ("date_format", "F j, Y"),
            ("default_comment_status", "open"),
            ("comment_moderation", "1"),
        ]
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
        Blog { users, categories, tags, posts, comments, options }
    }

    pub fn post(&self, id: u32) -> Option<&Post> {
        self.posts.iter().find(|p| p.id == id)
    }
    pub fn user(&self, id: u32) -> Option<&User> {
        self.users.iter().find(|u| u.id == id)
    }
    pub fn opt(&self, key: &str) -> &str {
        self.options.get(key).map(String::as_str).unwrap_or("")
    }

    /// Posts (or pages) in the list view `status` (`all` leaves out trash) matching `kw` in title or content.
    pub fn search_posts(&self, kind: &str, status: &str, kw: &str) -> Vec<&Post> {
        self.posts
            .iter()
            .rev()
            .filter(|p| p.kind == kind)
            .filter(|p| if status == "all" { p.status != "trash" } else { p.status == status })
            .filter(|p| kw.is_empty() || contains_ci(&p.title, kw) || contains_ci(&p.content, kw))
            .collect()
    }

    /// Users matching `kw` in login, name or email.
    pub fn search_users(&self, kw: &str) -> Vec<&User> {
        self.users
            .iter()
            .filter(|u| {
                kw.is_empty() || contains_ci(&u.login, kw) || contains_ci(&u.display(), kw) || contains_ci(&u.email, kw)
            })
            .collect()
    }

    /// Comments in view `status` (`all` = approved and pending) matching `kw` in author, email or text.
    pub fn search_comments(&self, status: &str, kw: &str, post: Option<u32>) -> Vec<&Comment> {
        self.comments
            .iter()
            .rev()
            .filter(|c| match status {
                "all" => matches!(c.status.as_str(), "approved" | "pending"),
                "moderated" => c.status == "pending",
                s => c.status == s,
            })
            .filter(|c| post.is_none_or(|p| c.post == p))
            .filter(|c| {
                kw.is_empty() || contains_ci(&c.author, kw) || contains_ci(&c.email, kw) || contains_ci(&c.content, kw)
            })
            .collect()
    }

    pub fn search_terms<'a>(&'a self, terms: &'a [Term], kw: &str) -> Vec<&'a Term> {
        terms.iter().filter(|t| kw.is_empty() || contains_ci(&t.name, kw) || contains_ci(&t.slug, kw)).collect()
    }

    /// Published posts in a category or with a tag (the term's Count column).
    pub fn term_count(&self, id: u32) -> usize {
        self.posts
            .iter()
            .filter(|p| p.status == "publish" && (p.categories.contains(&id) || p.tags.contains(&id)))
            .count()
    }

    /// Approved comments of a post.
    pub fn approved_count(&self, post: u32) -> usize {
        self.comments.iter().filter(|c| c.post == post && c.status == "approved").count()
    }

    /// The id of the tag named `name`, created if new.
    pub fn tag_id(&mut self, name: &str) -> Option<u32> {
        let name = name.trim();
        if name.is_empty() {
            return None;
        }
        if let Some(t) = self.tags.iter().find(|t| t.name.eq_ignore_ascii_case(name)) {
            return Some(t.id);
        }
        let id = self.tags.iter().map(|t| t.id).max().unwrap_or(99) + 1;
        self.tags.push(Term { id, name: name.into(), slug: slug(name), parent: None, description: String::new() });
        Some(id)
    }

    pub fn role_label(role: &str) -> &'static str {
        ROLES.iter().find(|(k, _)| *k == role).map(|(_, l)| *l).unwrap_or("None")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seed_is_deterministic_and_sized() {
        let b = Blog::seed();
        assert_eq!(b, Blog::seed());
        assert!(b.posts.iter().filter(|p| p.kind == "post").count() >= 240);
        assert_eq!(b.comments.len(), 420);
        let mut logins: Vec<_> = b.users.iter().map(|u| &u.login).collect();
        logins.sort();
        logins.dedup();
        assert_eq!(logins.len(), b.users.len(), "logins are unique");
    }
}
