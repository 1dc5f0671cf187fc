//! The WordPress fixture (4.9 with the classic editor as v1, 6.x with the
//! block editor as v2; see `sites/CHANGES.md` and shifts.md W1-W13): the
//! login (v2 with the "Administration email verification" screen), the admin
//! (posts, pages, comments, categories, tags, users, settings, appearance)
//! and the public site. The site is a pure function of a request (a
//! [`crate::kit::web::Handler`]); its blog and sessions live in a
//! [`crate::kit::state::State`], whose `reset` swaps in a clone of the seed.
//!
//! * [`data`]: the seeded blog; [`ui`]: admin chrome and list tables.
//! * `pages_posts` (lists, quick edit), `editor` (the two editors),
//!   `pages_admin` (comments, terms, users), `pages_site` (settings,
//!   appearance), `public` (the theme).
//! * [`tasks`] and [`skills`]: the task generator and the example skills.

use std::sync::Arc;

use skillshift_common::skills::Step;
use skillshift_common::Version;

use crate::kit::state::{Live, State};
use crate::kit::tasks::{click, sign_in};
use crate::kit::text::esc;
use crate::kit::url::encode_query;
use crate::kit::web::{Handler, Req, Resp};
use crate::App;

pub mod data;
mod editor;
mod pages_admin;
mod pages_posts;
mod pages_site;
mod public;
pub mod skills;
pub mod tasks;
pub mod ui;

use crate::kit::state::{err, ok, Out};
use data::Blog;
use ui::Notice;

pub const USERNAME: &str = "admin";
pub const PASSWORD: &str = "admin1234";

/// What WordPress keeps per session besides its notice.
#[derive(Debug, Clone, Default)]
struct Session {
    /// v2: "Get started" was pressed in the block editor's welcome guide.
    welcome_done: bool,
}

type Inner = Live<Blog, Session>;

/// One version of WordPress.
pub struct WordPress {
    version: Version,
    state: State<Blog, Session>,
}

/// What an admin screen handler sees.
pub struct Ctx<'a> {
    pub version: Version,
    pub blog: &'a mut Blog,
    pub notice: Option<Notice>,
    pub welcome_done: bool,
}

impl Ctx<'_> {
    pub fn v2(&self) -> bool {
        self.version == Version::V2
    }

    /// A full admin screen in menu `section`, with `current` the submenu href.
    pub fn page(&self, section: &str, current: &str, h1: &str, title_action: &str, body: &str) -> Resp {
        let pending = self.blog.comments.iter().filter(|c| c.status == "pending").count();
        Resp::Page(ui::admin_page(
            self.version,
            section,
            current,
            self.blog.opt("blogname"),
            pending,
            h1,
            title_action,
            self.notice.as_ref(),
            body,
        ))
    }
}

impl WordPress {
    pub fn new(version: Version) -> WordPress {
        WordPress { version, state: State::new(Blog::seed()) }
    }

    fn login(&self, req: &Req, inner: &mut Inner, session: Option<&str>) -> Resp {
        let v2 = self.version == Version::V2;
        match req.q("action") {
            Some("logout") => {
                if let Some(s) = session {
                    inner.close(s);
                }
                return Resp::Redirect { to: "/wp-login.php?loggedout=true".into(), cookie: Some(String::new()) };
            }
            Some("confirm_admin_email") if v2 && session.is_some() => {
                if req.post {
                    return Resp::redirect("/wp-admin/");
                }
                return Resp::Page(verify_email_page(inner.data.opt("admin_email")));
            }
            _ => {}
        }
        if req.post {
            let user = req.f("log").map(str::trim);
            let good = (user == Some(USERNAME) || user == Some("admin@example.com")) && req.f("pwd") == Some(PASSWORD);
            if !good {
                return Resp::Page(login_page(Some(
                    "Error: The password you entered for the username admin is incorrect. Lost your password?",
                )));
            }
            let token = inner.open("wp", 0x2545_F491, Session::default());
            let to = if v2 { "/wp-login.php?action=confirm_admin_email" } else { "/wp-admin/" };
            return Resp::Redirect { to: to.into(), cookie: Some(token) };
        }
        if session.is_some() && req.q("loggedout").is_none() {
            return Resp::redirect("/wp-admin/");
        }
        let msg = req.q("loggedout").map(|_| "You are now logged out.");
        Resp::Page(login_page_with(None, msg))
    }
}

fn login_page(error: Option<&str>) -> String {
    login_page_with(error, None)
}

fn login_page_with(error: Option<&str>, message: Option<&str>) -> String {
    let error = error.map(|e| format!("<div id=\"login_error\" role=\"alert\">{}</div>", esc(e))).unwrap_or_default();
    let message = message.map(|m| format!("<p class=\"message\" role=\"status\">{m}</p>")).unwrap_or_default();
    ui::shell(
        "Log In ‹ Skillshift Journal — WordPress",
        "login",
        ".login main{width:320px;margin:8% auto}.login form{background:#fff;padding:24px;border:1px solid #c3c4c7}",
        &format!(
            "<main id=\"login\"><h1><a href=\"https://wordpress.org/\">Powered by WordPress</a></h1>{error}{message}\
             <form name=\"loginform\" id=\"loginform\" method=\"post\" action=\"/wp-login.php\" aria-label=\"Log In\">\
             <p><label for=\"user_login\">Username or Email Address</label><br><input type=\"text\" name=\"log\" id=\"user_login\" autocomplete=\"username\"></p>\
             <p><label for=\"user_pass\">Password</label><br><input type=\"password\" name=\"pwd\" id=\"user_pass\" autocomplete=\"current-password\"></p>\
             <p><input name=\"rememberme\" type=\"checkbox\" id=\"rememberme\" value=\"forever\"> <label for=\"rememberme\">Remember Me</label></p>\
             <p class=\"submit\"><input type=\"submit\" name=\"wp-submit\" id=\"wp-submit\" class=\"button button-primary\" value=\"Log In\"></p></form>\
             <p id=\"nav\"><a href=\"/wp-login.php?action=lostpassword\">Lost your password?</a></p>\
             <p id=\"backtoblog\"><a href=\"/\">← Go to Skillshift Journal</a></p></main>"
        ),
    )
}

/// v2's "Administration email verification" screen after login (W12).
fn verify_email_page(email: &str) -> String {
    ui::shell(
        "Confirm your administration email ‹ Skillshift Journal — WordPress",
        "login",
        ".login main{width:420px;margin:8% auto;background:#fff;padding:24px}",
        &format!(
            "<main id=\"login\"><form method=\"post\" action=\"/wp-login.php?action=confirm_admin_email\" aria-labelledby=\"verify-h\">\
             <h1 id=\"verify-h\">Administration email verification</h1>\
             <p>Please verify that the <strong>administration email</strong> for this website is still correct.</p>\
             <p>Current administration email: <strong>{}</strong></p>\
             <p>This email may be different from your personal email address.</p>\
             <p><a href=\"/wp-admin/options-general.php#admin_email\">Update</a> \
             <button type=\"submit\" name=\"correct-admin-email\" class=\"button button-primary\">The email is correct</button></p>\
             <p><a href=\"/wp-admin/\">Remind me later</a></p></form></main>",
            esc(email)
        ),
    )
}

/// Dispatches an admin file (`edit.php`, `post.php`, ...) to its screen.
fn route(ctx: &mut Ctx, req: &Req, file: &str) -> Out {
    match file {
        "index.php" => pages_admin::dashboard(ctx).into(),
        "edit.php" if req.post => pages_posts::inline_save(ctx, req),
        "edit.php" => pages_posts::list(ctx, req).into(),
        "post.php" | "post-new.php" => editor::route(ctx, req, file),
        "edit-comments.php" => pages_admin::comments(ctx, req).into(),
        "comment.php" => pages_admin::comment_action(ctx, req),
        "edit-tags.php" | "term.php" => pages_admin::terms(ctx, req, file),
        "users.php" | "user-edit.php" | "user-new.php" | "profile.php" => pages_admin::users(ctx, req, file),
        f if f.starts_with("options") => pages_site::settings(ctx, req, f),
        "themes.php" | "customize.php" | "widgets.php" | "nav-menus.php" | "theme-editor.php" | "site-editor.php" => {
            pages_site::appearance(ctx, req, file)
        }
        _ => pages_site::simple(ctx, file),
    }
}

impl Handler for WordPress {
    fn handle(&self, req: &Req) -> Resp {
        let mut inner = self.state.lock();
        let inner = &mut *inner;
        let session = inner.session_id(req);
        if req.path == "/wp-login.php" {
            return self.login(req, inner, session.as_deref());
        }
        if !req.path.starts_with("/wp-admin") {
            if req.path == "/wp-comments-post.php" && req.post {
                return public::post_comment(&mut inner.data, req);
            }
            return public::route(self.version, &inner.data, req);
        }
        let Some(sid) = session else {
            return Resp::redirect(format!("/wp-login.php?redirect_to={}", encode_query(&req.path)));
        };
        let file = req.path.trim_start_matches("/wp-admin").trim_start_matches('/');
        let file = if file.is_empty() { "index.php" } else { file };
        if file == "admin-post.php" && req.post && req.q("action") == Some("dismiss-welcome") {
            // v2: "Get started" in the block editor's welcome guide, remembered for the session.
            if let Some(s) = inner.session(&sid) {
                s.welcome_done = true;
            }
            let back = req.f("back").filter(|b| b.starts_with("/wp-admin/")).unwrap_or("/wp-admin/post-new.php");
            return Resp::redirect(back);
        }
        let notice = inner.take_flash(&sid, req);
        let welcome_done = inner.session(&sid).is_some_and(|s| s.welcome_done);
        let mut ctx = Ctx { version: self.version, blog: &mut inner.data, notice, welcome_done };
        let out = route(&mut ctx, req, file);
        inner.finish(&sid, out)
    }

    fn reset(&self) {
        self.state.reset();
    }

    fn login_steps(&self) -> Vec<Step> {
        login_steps(self.version)
    }
}

/// The steps that log in from a fresh browser (v2 confirms the admin email, W12).
pub fn login_steps(version: Version) -> Vec<Step> {
    let mut steps = sign_in("__WORDPRESS__/wp-login.php", "Username or Email Address", USERNAME, PASSWORD, "Log In");
    if version == Version::V2 {
        steps.push(click("button", "The email is correct"));
    }
    steps
}

/// The application of `version`.
pub fn app(version: Version) -> Arc<dyn App> {
    Arc::new(WordPress::new(version))
}

#[cfg(test)]
mod tests {
    use skillshift_common::Version;

    use super::*;

    #[test]
    fn admin_needs_a_session_and_reset_drops_it() {
        for v in [Version::V1, Version::V2] {
            let wp = WordPress::new(v);
            let r = wp.handle(&Req::get("/wp-admin/edit.php", None));
            assert!(matches!(&r, Resp::Redirect { to, .. } if to.starts_with("/wp-login.php")), "{v}: {r:?}");
            let r = wp.handle(&Req::post("/wp-login.php", &[("log", USERNAME), ("pwd", PASSWORD)], None));
            let Resp::Redirect { to, cookie: Some(token) } = r else { panic!("{v}: login sets a session") };
            let want = if v == Version::V2 { "/wp-login.php?action=confirm_admin_email" } else { "/wp-admin/" };
            assert_eq!(to, want);
            let r = wp.handle(&Req::get("/wp-admin/post.php?post=12&action=trash", Some(&token)));
            assert!(matches!(r, Resp::Redirect { .. }));
            assert_eq!(wp.state.lock().data.post(12).map(|p| p.status.as_str()), Some("trash"));
            App::reset(&wp);
            assert_ne!(wp.state.lock().data.post(12).map(|p| p.status.as_str()), Some("trash"));
            let r = wp.handle(&Req::get("/wp-admin/edit.php", Some(&token)));
            assert!(
                matches!(&r, Resp::Redirect { to, .. } if to.starts_with("/wp-login.php")),
                "{v}: reset drops sessions"
            );
        }
    }

    #[test]
    fn the_block_editor_shows_the_welcome_guide_until_get_started() {
        let wp = WordPress::new(Version::V2);
        let Resp::Redirect { cookie: Some(token), .. } =
            wp.handle(&Req::post("/wp-login.php", &[("log", USERNAME), ("pwd", PASSWORD)], None))
        else {
            panic!("login")
        };
        let editor = "/wp-admin/post.php?post=12&action=edit";
        let Resp::Page(html) = wp.handle(&Req::get(editor, Some(&token))) else { panic!("editor") };
        assert!(html.contains("Welcome to the Block Editor") && !html.contains("id=\"adminmenu\""), "W8 and W9");
        let r =
            wp.handle(&Req::post("/wp-admin/admin-post.php?action=dismiss-welcome", &[("back", editor)], Some(&token)));
        assert_eq!(r, Resp::redirect(editor));
        let Resp::Page(html) = wp.handle(&Req::get(editor, Some(&token))) else { panic!("editor") };
        assert!(!html.contains("Welcome to the Block Editor"));
    }
}
