//! The other admin screens: the dashboard, comments (moderation views,
//! search, row actions Approve/Unapprove, Reply, Quick Edit, Edit, Spam,
//! Trash, and the comment edit form), categories and tags (list, add form,
//! term edit), and users (list, edit, add).

use crate::kit::paging::paginate;
use crate::kit::text::{esc, slug};
use crate::kit::web::{Req, Resp};

use super::data::{Blog, Term, User, ROLES};
use super::ui::{list_table, q, quoted, search_box, tablenav, Row};
use super::{err, ok, Ctx, Out};

const PER_PAGE: usize = 20;

pub fn dashboard(ctx: &Ctx) -> Resp {
    let b = &*ctx.blog;
    let posts = b.posts.iter().filter(|p| p.kind == "post" && p.status == "publish").count();
    let pages = b.posts.iter().filter(|p| p.kind == "page" && p.status == "publish").count();
    let pending = b.comments.iter().filter(|c| c.status == "pending").count();
    let recent: String = b
        .posts
        .iter()
        .rev()
        .filter(|p| p.kind == "post" && p.status == "publish")
        .take(5)
        .map(|p| {
            format!(
                "<li><span>{}</span> <a href=\"/wp-admin/post.php?post={}&action=edit\">{}</a></li>",
                p.date,
                p.id,
                esc(&p.title)
            )
        })
        .collect();
    let body = format!(
        "<div id=\"dashboard-widgets\"><section class=\"postbox\" aria-labelledby=\"glance-h\"><h2 id=\"glance-h\">At a Glance</h2><ul>\
         <li><a href=\"/wp-admin/edit.php?post_type=post\">{posts} Posts</a></li><li><a href=\"/wp-admin/edit.php?post_type=page\">{pages} Pages</a></li>\
         <li><a href=\"/wp-admin/edit-comments.php?comment_status=moderated\">{pending} Comments in moderation</a></li></ul>\
         <p>WordPress {} running the {} theme.</p></section>\
         <section class=\"postbox\" aria-labelledby=\"activity-h\"><h2 id=\"activity-h\">Activity</h2><h3>Recently Published</h3><ul>{recent}</ul></section></div>",
        if ctx.v2() { "6.6" } else { "4.9.8" },
        if ctx.v2() { "Twenty Twenty-Four" } else { "Twenty Seventeen" }
    );
    ctx.page("dashboard", "index.php", "Dashboard", "", &body)
}

pub fn comments(ctx: &Ctx, req: &Req) -> Resp {
    let b = &*ctx.blog;
    let status = req.q("comment_status").unwrap_or("all");
    let kw = req.q("s").unwrap_or("");
    let post = req.q("p").and_then(|p| p.parse::<u32>().ok());
    let found = b.search_comments(status, kw, post);
    let (rows, pages) = paginate(&found, req.page(), PER_PAGE);
    let mut base = format!("/wp-admin/edit-comments.php?comment_status={status}");
    if !kw.is_empty() {
        base.push_str(&format!("&s={}", q(kw)));
    }
    if let Some(p) = post {
        base.push_str(&format!("&p={p}"));
    }
    let rows: Vec<Row> = rows
        .iter()
        .map(|c| {
            let act = |action: &str, label: &str, aria: &str| {
                format!("<a href=\"/wp-admin/comment.php?c={}&action={action}\" aria-label=\"{aria}\">{label}</a>", c.id)
            };
            let mut actions = Vec::new();
            match c.status.as_str() {
                "pending" => actions.push(act("approvecomment", "Approve", "Approve this comment")),
                "approved" => actions.push(act("unapprovecomment", "Unapprove", "Unapprove this comment")),
                _ => {}
            }
            actions.push(format!(
                "<button type=\"button\" class=\"button-link\" aria-expanded=\"false\" aria-controls=\"replyrow-{id}\" aria-label=\"Reply to this comment\">Reply</button>\
                 <button type=\"button\" class=\"button-link\" aria-expanded=\"false\" aria-controls=\"replyrow-{id}\" aria-label=\"Quick edit this comment inline\">Quick&nbsp;Edit</button>",
                id = c.id
            ));
            actions.push(format!("<a href=\"/wp-admin/comment.php?action=editcomment&c={}\" aria-label=\"Edit this comment\">Edit</a>", c.id));
            if c.status != "spam" {
                actions.push(act("spamcomment", "Spam", "Mark this comment as spam"));
            }
            actions.push(act("trashcomment", "Trash", "Move this comment to the Trash"));
            let post = b.post(c.post);
            let reply = format!(
                "<tr id=\"replyrow-{id}\" class=\"inline-edit-row\" hidden><td colspan=\"4\"><form method=\"post\" action=\"/wp-admin/comment.php?action=replyto&c={id}\">\
                 <label for=\"replycontent-{id}\">Reply to Comment</label> <textarea id=\"replycontent-{id}\" name=\"content\"></textarea>\
                 <button type=\"submit\" class=\"button button-primary\">Reply</button></form></td></tr>",
                id = c.id
            );
            Row {
                primary: format!("<strong id=\"comment-author-{}\">{}</strong><br>{}", c.id, esc(&c.author), esc(&c.email)),
                title_id: format!("comment-author-{}", c.id),
                cells: vec![
                    format!("<p>{}</p><div class=\"row-actions\">{}</div>", esc(&c.content), actions.join(" | ")),
                    post.map(|p| format!("<a href=\"/wp-admin/post.php?post={}&action=edit\">{}</a>", p.id, esc(&p.title))).unwrap_or_default(),
                    c.date.replace('-', "/"),
                ],
                after: reply,
            }
        })
        .collect();
    let count = |st: &str| b.search_comments(st, "", None).len();
    let view = |st: &str, label: &str| {
        format!("<li><a href=\"/wp-admin/edit-comments.php?comment_status={st}\">{label} ({})</a></li>", count(st))
    };
    let body = format!(
        "<ul class=\"subsubsub\" aria-label=\"Filter comments by status\">{}{}{}{}{}</ul>{}{}{}",
        view("all", "All"),
        view("moderated", "Pending"),
        view("approved", "Approved"),
        view("spam", "Spam"),
        view("trash", "Trash"),
        search_box("/wp-admin/edit-comments.php", "Search Comments", kw, &[("comment_status", status)]),
        tablenav(&base, req.page().min(pages), pages, found.len()),
        list_table(
            "Comments",
            &[("author", "Author"), ("comment", "Comment"), ("response", "In Response To"), ("date", "Submitted On")],
            &rows
        )
    );
    ctx.page("comments", "edit-comments.php", "Comments", "", &body)
}

/// `comment.php`: GET actions, the edit form, and POST saves and replies.
pub fn comment_action(ctx: &mut Ctx, req: &Req) -> Out {
    let id = req.q("c").or(req.f("comment_ID")).and_then(|c| c.parse::<u32>().ok());
    let Some(idx) = id.and_then(|id| ctx.blog.comments.iter().position(|c| c.id == id)) else {
        return err("/wp-admin/edit-comments.php", "Invalid comment ID.");
    };
    let list = "/wp-admin/edit-comments.php";
    let action = req.q("action").unwrap_or("");
    if req.post {
        if action == "replyto" {
            let text = req.f("content").unwrap_or("").trim();
            if text.is_empty() {
                return err(list, "Please type your comment text.");
            }
            let b = &mut *ctx.blog;
            let post = b.comments[idx].post;
            b.comments[idx].status = "approved".into();
            let nid = b.comments.iter().map(|c| c.id).max().unwrap_or(0) + 1;
            b.comments.push(super::data::Comment {
                id: nid,
                post,
                author: "Site Admin".into(),
                email: "admin@example.com".into(),
                content: text.into(),
                status: "approved".into(),
                date: "2026-11-29".into(),
            });
            return ok(list, "Reply posted.");
        }
        let c = &mut ctx.blog.comments[idx];
        if let Some(t) = req.f("content").filter(|t| !t.trim().is_empty()) {
            c.content = t.to_string();
        }
        if let Some(n) = req.f("newcomment_author").filter(|t| !t.trim().is_empty()) {
            c.author = n.trim().to_string();
        }
        if let Some(st) = req.f("comment_status").and_then(|s| match s {
            "1" => Some("approved"),
            "0" => Some("pending"),
            "spam" => Some("spam"),
            _ => None,
        }) {
            c.status = st.into();
        }
        return ok(list, "Comment updated.");
    }
    let c = &mut ctx.blog.comments[idx];
    let (status, msg) = match action {
        "approvecomment" => ("approved", "1 comment approved."),
        "unapprovecomment" => ("pending", "1 comment unapproved."),
        "spamcomment" => ("spam", "1 comment marked as spam."),
        "trashcomment" => ("trash", "1 comment moved to the Trash."),
        "editcomment" => {
            let c = c.clone();
            let radio = |v: &str, l: &str, on: bool| {
                format!(
                    "<label><input type=\"radio\" name=\"comment_status\" value=\"{v}\"{}> {l}</label>",
                    if on { " checked" } else { "" }
                )
            };
            let body = format!(
                "<form method=\"post\" action=\"/wp-admin/comment.php?action=editedcomment&c={id}\" aria-label=\"Edit Comment\">\
                 <input type=\"hidden\" name=\"comment_ID\" value=\"{id}\"><table class=\"form-table\" role=\"presentation\">\
                 <tr><th><label for=\"name\">Name</label></th><td><input type=\"text\" id=\"name\" name=\"newcomment_author\" value=\"{}\"></td></tr>\
                 <tr><th><label for=\"email\">Email</label></th><td><input type=\"email\" id=\"email\" name=\"newcomment_author_email\" value=\"{}\"></td></tr></table>\
                 <label for=\"content\">Comment</label><textarea id=\"content\" name=\"content\" rows=\"6\">{}</textarea>\
                 <fieldset><legend>Status</legend>{}{}{}</fieldset><button type=\"submit\" class=\"button button-primary\">Update</button></form>",
                esc(&c.author),
                esc(&c.email),
                esc(&c.content),
                radio("1", "Approved", c.status == "approved"),
                radio("0", "Pending", c.status == "pending"),
                radio("spam", "Spam", c.status == "spam"),
                id = c.id
            );
            return ctx.page("comments", "", "Edit Comment", "", &body).into();
        }
        _ => return err(list, "Unknown comment action."),
    };
    c.status = status.into();
    ok(list, msg)
}

/// `edit-tags.php` (list and add form) and `term.php` (edit) for categories and tags.
pub fn terms(ctx: &mut Ctx, req: &Req, file: &str) -> Out {
    let is_cat = req.q("taxonomy") != Some("post_tag");
    let (tax, singular, plural) =
        if is_cat { ("category", "Category", "Categories") } else { ("post_tag", "Tag", "Tags") };
    let list_url = format!("/wp-admin/edit-tags.php?taxonomy={tax}");
    if req.post {
        let name = req.f("tag-name").unwrap_or("").trim().to_string();
        if name.is_empty() {
            return err(list_url, "A name is required for this term.");
        }
        let b = &mut *ctx.blog;
        let terms = if is_cat { &mut b.categories } else { &mut b.tags };
        let term_slug = req.f("slug").map(slug).filter(|s| !s.is_empty()).unwrap_or_else(|| slug(&name));
        let description = req.f("description").unwrap_or("").to_string();
        let parent = req.f("parent").and_then(|p| p.parse::<u32>().ok()).filter(|p| *p > 0);
        if let Some(id) = req.f("tag_ID").and_then(|i| i.parse::<u32>().ok()) {
            let Some(t) = terms.iter_mut().find(|t| t.id == id) else { return err(list_url, "Item not updated.") };
            t.name = name;
            t.slug = term_slug;
            t.description = description;
            t.parent = parent;
            return ok(list_url, format!("{singular} updated."));
        }
        if terms.iter().any(|t| t.name.eq_ignore_ascii_case(&name)) {
            return err(list_url, "A term with the name provided already exists in this taxonomy.");
        }
        let id = if is_cat {
            terms.iter().map(|t| t.id).max().unwrap_or(0) + 1
        } else {
            terms.iter().map(|t| t.id).max().unwrap_or(99) + 1
        };
        terms.push(Term { id, name, slug: term_slug, parent, description });
        return ok(list_url, format!("{singular} added."));
    }
    let b = &*ctx.blog;
    let all = if is_cat { &b.categories } else { &b.tags };
    if file == "term.php" {
        let Some(t) =
            req.q("tag_ID").and_then(|i| i.parse::<u32>().ok()).and_then(|id| all.iter().find(|t| t.id == id))
        else {
            return err(list_url, "You attempted to edit an item that doesn’t exist.");
        };
        let body = format!(
            "<form method=\"post\" action=\"/wp-admin/edit-tags.php?taxonomy={tax}\" aria-label=\"Edit {singular}\"><input type=\"hidden\" name=\"tag_ID\" value=\"{}\">\
             <table class=\"form-table\" role=\"presentation\"><tr><th><label for=\"name\">Name</label></th><td><input type=\"text\" id=\"name\" name=\"tag-name\" value=\"{}\"></td></tr>\
             <tr><th><label for=\"slug\">Slug</label></th><td><input type=\"text\" id=\"slug\" name=\"slug\" value=\"{}\"></td></tr>\
             <tr><th><label for=\"description\">Description</label></th><td><textarea id=\"description\" name=\"description\">{}</textarea></td></tr></table>\
             <button type=\"submit\" class=\"button button-primary\">Update</button></form>",
            t.id,
            esc(&t.name),
            esc(&t.slug),
            esc(&t.description)
        );
        return ctx.page("posts", "", &format!("Edit {singular}"), "", &body).into();
    }
    let kw = req.q("s").unwrap_or("");
    let found = b.search_terms(all, kw);
    let (rows, pages) = paginate(&found, req.page(), PER_PAGE);
    let base = if kw.is_empty() { list_url.clone() } else { format!("{list_url}&s={}", q(kw)) };
    let rows: Vec<Row> = rows
        .iter()
        .map(|t| {
            let n = quoted(&t.name);
            let archive = if is_cat { format!("/category/{}/", t.slug) } else { format!("/tag/{}/", t.slug) };
            let filter = if is_cat { format!("category_name={}", t.slug) } else { format!("tag={}", t.slug) };
            Row {
                primary: format!(
                    "<strong><a class=\"row-title\" id=\"term-{id}\" href=\"/wp-admin/term.php?taxonomy={tax}&tag_ID={id}\">{}</a></strong>\
                     <div class=\"row-actions\"><a href=\"/wp-admin/term.php?taxonomy={tax}&tag_ID={id}\" aria-label=\"Edit {n}\">Edit</a> | \
                     <a href=\"{archive}\" aria-label=\"View {n} archive\">View</a></div>",
                    esc(&t.name),
                    id = t.id
                ),
                title_id: format!("term-{}", t.id),
                cells: vec![
                    if t.description.is_empty() { "—".into() } else { esc(&t.description) },
                    esc(&t.slug),
                    format!("<a href=\"/wp-admin/edit.php?{filter}\">{}</a>", b.term_count(t.id)),
                ],
                after: String::new(),
            }
        })
        .collect();
    let parent = if is_cat {
        let opts: String =
            b.categories.iter().map(|c| format!("<option value=\"{}\">{}</option>", c.id, esc(&c.name))).collect();
        format!("<div class=\"form-field\"><label for=\"parent\">Parent {singular}</label><select id=\"parent\" name=\"parent\"><option value=\"0\">None</option>{opts}</select></div>")
    } else {
        String::new()
    };
    let body = format!(
        "<div id=\"col-container\"><div id=\"col-left\"><form method=\"post\" action=\"{list_url}\" aria-labelledby=\"add-h\"><h2 id=\"add-h\">Add New {singular}</h2>\
         <div class=\"form-field\"><label for=\"tag-name\">Name</label><input type=\"text\" id=\"tag-name\" name=\"tag-name\"></div>\
         <div class=\"form-field\"><label for=\"tag-slug\">Slug</label><input type=\"text\" id=\"tag-slug\" name=\"slug\"></div>{parent}\
         <div class=\"form-field\"><label for=\"tag-description\">Description</label><textarea id=\"tag-description\" name=\"description\"></textarea></div>\
         <button type=\"submit\" class=\"button button-primary\">Add New {singular}</button></form></div>\
         <div id=\"col-right\">{}{}{}</div></div>",
        search_box("/wp-admin/edit-tags.php", &format!("Search {plural}"), kw, &[("taxonomy", tax)]),
        tablenav(&base, req.page().min(pages), pages, found.len()),
        list_table(plural, &[("name", "Name"), ("description", "Description"), ("slug", "Slug"), ("count", "Count")], &rows)
    );
    ctx.page("posts", &format!("edit-tags.php?taxonomy={tax}"), plural, "", &body).into()
}

pub fn role_select(current: &str) -> String {
    let opts: String = ROLES
        .iter()
        .map(|(k, l)| format!("<option value=\"{k}\"{}>{l}</option>", if *k == current { " selected" } else { "" }))
        .collect();
    format!("<select id=\"role\" name=\"role\">{opts}</select>")
}

/// `users.php`, `user-edit.php`, `profile.php`, `user-new.php`.
pub fn users(ctx: &mut Ctx, req: &Req, file: &str) -> Out {
    let add = if ctx.v2() { "Add New User" } else { "Add New" };
    let add_link = format!("<a href=\"/wp-admin/user-new.php\" class=\"page-title-action\">{add}</a>");
    if req.post {
        return save_user(ctx, req, file);
    }
    let b = &*ctx.blog;
    match file {
        "user-edit.php" | "profile.php" => {
            let id = if file == "profile.php" { Some(1) } else { req.q("user_id").and_then(|i| i.parse::<u32>().ok()) };
            let Some(u) = id.and_then(|id| b.user(id)) else { return err("/wp-admin/users.php", "Invalid user ID.") };
            let h1 = if file == "profile.php" { "Profile".to_string() } else { format!("Edit User {}", u.login) };
            let field = |id: &str, name: &str, label: &str, v: &str, ty: &str| {
                format!("<tr><th><label for=\"{id}\">{label}</label></th><td><input type=\"{ty}\" id=\"{id}\" name=\"{name}\" value=\"{}\"></td></tr>", esc(v))
            };
            let body = format!(
                "<form method=\"post\" action=\"/wp-admin/user-edit.php\" aria-label=\"Edit User\"><input type=\"hidden\" name=\"user_id\" value=\"{}\">\
                 <h2>Name</h2><table class=\"form-table\" role=\"presentation\">\
                 <tr><th><label for=\"user_login\">Username</label></th><td><input type=\"text\" id=\"user_login\" value=\"{}\" disabled> Usernames cannot be changed.</td></tr>\
                 <tr><th><label for=\"role\">Role</label></th><td>{}</td></tr>{}{}</table>\
                 <h2>Contact Info</h2><table class=\"form-table\" role=\"presentation\">{}</table>\
                 <p class=\"submit\"><button type=\"submit\" class=\"button button-primary\">{}</button></p></form>",
                u.id,
                esc(&u.login),
                role_select(&u.role),
                field("first_name", "first_name", "First Name", &u.first, "text"),
                field("last_name", "last_name", "Last Name", &u.last, "text"),
                field("email", "email", "Email (required)", &u.email, "email"),
                if file == "profile.php" { "Update Profile" } else { "Update User" }
            );
            ctx.page("users", file, &h1, &add_link, &body).into()
        }
        "user-new.php" => {
            let body = format!(
                "<p>Create a brand new user and add them to this site.</p><form method=\"post\" action=\"/wp-admin/user-new.php\" aria-label=\"Add New User\">\
                 <table class=\"form-table\" role=\"presentation\">\
                 <tr><th><label for=\"user_login\">Username (required)</label></th><td><input type=\"text\" id=\"user_login\" name=\"user_login\"></td></tr>\
                 <tr><th><label for=\"email\">Email (required)</label></th><td><input type=\"email\" id=\"email\" name=\"email\"></td></tr>\
                 <tr><th><label for=\"first_name\">First Name</label></th><td><input type=\"text\" id=\"first_name\" name=\"first_name\"></td></tr>\
                 <tr><th><label for=\"last_name\">Last Name</label></th><td><input type=\"text\" id=\"last_name\" name=\"last_name\"></td></tr>\
                 <tr><th><label for=\"role\">Role</label></th><td>{}</td></tr></table>\
                 <p class=\"submit\"><button type=\"submit\" class=\"button button-primary\">Add New User</button></p></form>",
                role_select("subscriber"),
            );
            ctx.page("users", "user-new.php", "Add New User", "", &body).into()
        }
        _ => {
            let kw = req.q("s").unwrap_or("");
            let role = req.q("role");
            let found: Vec<&User> =
                b.search_users(kw).into_iter().filter(|u| role.is_none_or(|r| u.role == r)).collect();
            let (rows, pages) = paginate(&found, req.page(), PER_PAGE);
            let base = if kw.is_empty() {
                "/wp-admin/users.php".to_string()
            } else {
                format!("/wp-admin/users.php?s={}", q(kw))
            };
            let rows: Vec<Row> = rows.iter().map(|u| user_row(b, u)).collect();
            let body = format!(
                "{}{}{}",
                search_box("/wp-admin/users.php", "Search Users", kw, &[]),
                tablenav(&base, req.page().min(pages), pages, found.len()),
                list_table(
                    "Users",
                    &[
                        ("username", "Username"),
                        ("name", "Name"),
                        ("email", "Email"),
                        ("role", "Role"),
                        ("posts", "Posts")
                    ],
                    &rows
                )
            );
            ctx.page("users", "users.php", "Users", &add_link, &body).into()
        }
    }
}

fn user_row(b: &Blog, u: &User) -> Row {
    let posts = b.posts.iter().filter(|p| p.author == u.id && p.kind == "post" && p.status == "publish").count();
    Row {
        primary: format!(
            "<strong><a id=\"user-{id}\" href=\"/wp-admin/user-edit.php?user_id={id}\">{}</a></strong>\
             <div class=\"row-actions\"><a href=\"/wp-admin/user-edit.php?user_id={id}\">Edit</a> | <a href=\"/author/{}/\">View</a></div>",
            esc(&u.login),
            esc(&u.login),
            id = u.id
        ),
        title_id: format!("user-{}", u.id),
        cells: vec![
            esc(&u.display()),
            format!("<a href=\"mailto:{0}\">{0}</a>", esc(&u.email)),
            Blog::role_label(&u.role).to_string(),
            format!("<a href=\"/wp-admin/edit.php?author={}\">{posts}</a>", u.id),
        ],
        after: String::new(),
    }
}

fn save_user(ctx: &mut Ctx, req: &Req, file: &str) -> Out {
    let b = &mut *ctx.blog;
    let role = req.f("role").filter(|r| ROLES.iter().any(|(k, _)| k == r));
    let email = req.f("email").unwrap_or("").trim().to_string();
    if file == "user-new.php" {
        let login = req.f("user_login").unwrap_or("").trim().to_string();
        if login.is_empty() || !email.contains('@') {
            return err("/wp-admin/user-new.php", "Error: Please enter a username and a valid email address.");
        }
        if b.users.iter().any(|u| u.login == login || u.email == email) {
            return err("/wp-admin/user-new.php", "Error: This username or email address is already registered.");
        }
        let id = b.users.iter().map(|u| u.id).max().unwrap_or(0) + 1;
        b.users.push(User {
            id,
            login,
            first: req.f("first_name").unwrap_or("").to_string(),
            last: req.f("last_name").unwrap_or("").to_string(),
            email,
            role: role.unwrap_or("subscriber").to_string(),
        });
        return ok("/wp-admin/users.php", "New user created.");
    }
    let Some(u) =
        req.f("user_id").and_then(|i| i.parse::<u32>().ok()).and_then(|id| b.users.iter_mut().find(|u| u.id == id))
    else {
        return err("/wp-admin/users.php", "Invalid user ID.");
    };
    let back = format!("/wp-admin/user-edit.php?user_id={}", u.id);
    if !email.contains('@') {
        return err(back, "Error: Please enter a valid email address.");
    }
    u.email = email;
    u.first = req.f("first_name").unwrap_or(&u.first).to_string();
    u.last = req.f("last_name").unwrap_or(&u.last).to_string();
    if let Some(r) = role {
        u.role = r.to_string();
    }
    ok(back, "User updated.")
}
