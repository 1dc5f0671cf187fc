//! The posts and pages list screens (`edit.php`): status views, search,
//! filters by category, tag and author, pagination, the row actions (Edit,
//! Quick Edit, Trash, View; Restore in the Trash), and the inline Quick Edit
//! form (v1 a link that opens it, v2 a button with `aria-expanded`, W13).

use crate::kit::layout::current;
use crate::kit::paging::paginate;
use crate::kit::text::{esc, slug};
use crate::kit::web::{Req, Resp};

use super::data::Post;
use super::ui::{list_table, q, quoted, search_box, tablenav, Row};
use super::{err, ok, Ctx, Out};

const PER_PAGE: usize = 20;

/// `edit.php`.
pub fn list(ctx: &Ctx, req: &Req) -> Resp {
    let kind = if req.q("post_type") == Some("page") { "page" } else { "post" };
    let status = req.q("post_status").unwrap_or("all");
    let kw = req.q("s").unwrap_or("");
    let b = &*ctx.blog;
    let cat = req.q("category_name").and_then(|s| b.categories.iter().find(|c| c.slug == s)).map(|c| c.id);
    let tag = req.q("tag").and_then(|s| b.tags.iter().find(|t| t.slug == s)).map(|t| t.id);
    let author = req.q("author").and_then(|a| a.parse::<u32>().ok());
    let found: Vec<&Post> = b
        .search_posts(kind, status, kw)
        .into_iter()
        .filter(|p| cat.is_none_or(|c| p.categories.contains(&c)))
        .filter(|p| tag.is_none_or(|t| p.tags.contains(&t)))
        .filter(|p| author.is_none_or(|a| p.author == a))
        .collect();
    let mut base = format!("/wp-admin/edit.php?post_type={kind}");
    for key in ["post_status", "s", "category_name", "tag", "author"] {
        if let Some(v) = req.q(key).filter(|v| !v.is_empty()) {
            base.push_str(&format!("&{key}={}", q(v)));
        }
    }
    let (rows, pages) = paginate(&found, req.page(), PER_PAGE);
    let inline = req.q("inline").and_then(|i| i.parse::<u32>().ok());
    let rows: Vec<Row> = rows.iter().map(|p| row(ctx, p, &base, inline)).collect();
    let count = |st: &str| b.search_posts(kind, st, "").len();
    let view = |st: &str, label: &str| {
        let cur = current(st == status);
        format!(
            "<li><a href=\"/wp-admin/edit.php?post_type={kind}&post_status={st}\"{cur}>{label} ({})</a></li>",
            count(st)
        )
    };
    let (plural, label) = if kind == "page" { ("Pages", "Search Pages") } else { ("Posts", "Search Posts") };
    let mut cols = vec![("title", "Title"), ("author", "Author")];
    if kind == "post" {
        cols.extend([("categories", "Categories"), ("tags", "Tags")]);
    }
    cols.extend([("comments", "Comments"), ("date", "Date")]);
    let hidden = [("post_type", kind), ("post_status", status)];
    let body = format!(
        "<ul class=\"subsubsub\" aria-label=\"Filter {plural} by status\">{}{}{}{}{}</ul>{}{}{}",
        view("all", "All"),
        view("publish", "Published"),
        view("draft", "Drafts"),
        view("pending", "Pending"),
        view("trash", "Trash"),
        search_box("/wp-admin/edit.php", label, kw, &hidden),
        tablenav(&base, req.page().min(pages), pages, found.len()),
        list_table(plural, &cols, &rows)
    );
    let new_href = if kind == "page" { "post-new.php?post_type=page" } else { "post-new.php" };
    let add = match (ctx.v2(), kind) {
        (false, _) => "Add New",
        (true, "page") => "Add New Page",
        (true, _) => "Add New Post",
    };
    let action = format!("<a href=\"/wp-admin/{new_href}\" class=\"page-title-action\">{add}</a>");
    let current = if kind == "page" { "edit.php?post_type=page" } else { "edit.php" };
    ctx.page(if kind == "page" { "pages" } else { "posts" }, current, plural, &action, &body)
}

fn row(ctx: &Ctx, p: &Post, base: &str, inline: Option<u32>) -> Row {
    let b = &*ctx.blog;
    let t = quoted(&p.title);
    let state = match p.status.as_str() {
        "draft" => " — <span class=\"post-state\">Draft</span>",
        "pending" => " — <span class=\"post-state\">Pending</span>",
        _ => "",
    };
    let mut actions = Vec::new();
    if p.status == "trash" {
        actions.push(format!("<a href=\"/wp-admin/post.php?post={}&action=untrash\" aria-label=\"Restore {t} from the Trash\">Restore</a>", p.id));
        actions.push(format!("<a href=\"/wp-admin/post.php?post={}&action=delete\" aria-label=\"Delete {t} permanently\">Delete Permanently</a>", p.id));
    } else {
        actions
            .push(format!("<a href=\"/wp-admin/post.php?post={}&action=edit\" aria-label=\"Edit {t}\">Edit</a>", p.id));
        if ctx.v2() {
            actions.push(format!(
                "<button type=\"button\" class=\"button-link editinline\" aria-expanded=\"false\" aria-controls=\"inline-edit-{}\" aria-label=\"Quick edit {t} inline\">Quick&nbsp;Edit</button>",
                p.id
            ));
        } else {
            actions.push(format!("<a href=\"{base}&inline={}\" class=\"editinline\" aria-label=\"Quick edit {t} inline\">Quick&nbsp;Edit</a>", p.id));
        }
        actions.push(format!(
            "<a href=\"/wp-admin/post.php?post={}&action=trash\" aria-label=\"Move {t} to the Trash\">Trash</a>",
            p.id
        ));
        if p.status == "publish" {
            actions.push(format!("<a href=\"{}\" aria-label=\"View {t}\">View</a>", p.permalink()));
        } else {
            actions.push(format!("<a href=\"/?p={}&preview=true\" aria-label=\"Preview {t}\">Preview</a>", p.id));
        }
    }
    let primary = format!(
        "<strong><a class=\"row-title\" id=\"post-title-{id}\" href=\"/wp-admin/post.php?post={id}&action=edit\">{}</a>{state}</strong>\
         <div class=\"row-actions\">{}</div>",
        esc(&p.title),
        actions.join(" | "),
        id = p.id
    );
    let author = b
        .user(p.author)
        .map(|u| {
            format!("<a href=\"/wp-admin/edit.php?post_type={}&author={}\">{}</a>", p.kind, u.id, esc(&u.display()))
        })
        .unwrap_or_default();
    let terms = |ids: &[u32], terms: &[super::data::Term], key: &str| {
        let links: Vec<String> = ids
            .iter()
            .filter_map(|id| terms.iter().find(|t| t.id == *id))
            .map(|t| format!("<a href=\"/wp-admin/edit.php?{key}={}\">{}</a>", t.slug, esc(&t.name)))
            .collect();
        if links.is_empty() {
            "—".to_string()
        } else {
            links.join(", ")
        }
    };
    let mut cells = vec![author];
    if p.kind == "post" {
        cells.push(terms(&p.categories, &b.categories, "category_name"));
        cells.push(terms(&p.tags, &b.tags, "tag"));
    }
    cells.push(format!("<a href=\"/wp-admin/edit-comments.php?p={}\">{}</a>", p.id, b.approved_count(p.id)));
    let label = match p.status.as_str() {
        "publish" => "Published",
        "trash" => "Trashed",
        _ => "Last Modified",
    };
    cells.push(format!("{label}<br>{}", p.date.replace('-', "/")));
    let open = inline == Some(p.id);
    let after = if ctx.v2() || open { inline_form(p, base, cells.len() + 1, !open || ctx.v2()) } else { String::new() };
    Row { primary, title_id: format!("post-title-{}", p.id), cells, after }
}

/// The inline Quick Edit row of a post.
fn inline_form(p: &Post, base: &str, colspan: usize, hidden: bool) -> String {
    let st = |v: &str, l: &str| {
        format!("<option value=\"{v}\"{}>{l}</option>", if p.status == v { " selected" } else { "" })
    };
    format!(
        "<tr id=\"inline-edit-{id}\" class=\"inline-edit-row\"{h}><td colspan=\"{colspan}\">\
         <form method=\"post\" action=\"/wp-admin/edit.php\"><fieldset><legend>Quick Edit</legend>\
         <input type=\"hidden\" name=\"post_ID\" value=\"{id}\"><input type=\"hidden\" name=\"back\" value=\"{back}\">\
         <p><label for=\"qe-title-{id}\">Title</label> <input type=\"text\" id=\"qe-title-{id}\" name=\"post_title\" value=\"{title}\"></p>\
         <p><label for=\"qe-slug-{id}\">Slug</label> <input type=\"text\" id=\"qe-slug-{id}\" name=\"post_name\" value=\"{slug}\"></p>\
         <p><label for=\"qe-status-{id}\">Status</label> <select id=\"qe-status-{id}\" name=\"_status\">{}{}{}</select></p>\
         </fieldset><p class=\"submit\"><button type=\"submit\" class=\"button button-primary\">Update</button> \
         <a href=\"{back}\" class=\"button\">Cancel</a></p></form></td></tr>",
        st("publish", "Published"),
        st("pending", "Pending Review"),
        st("draft", "Draft"),
        id = p.id,
        h = if hidden { " hidden" } else { "" },
        back = esc(base),
        title = esc(&p.title),
        slug = esc(&p.slug),
    )
}

/// POST `edit.php`: the Quick Edit form.
pub fn inline_save(ctx: &mut Ctx, req: &Req) -> Out {
    let back =
        req.f("back").filter(|b| b.starts_with("/wp-admin/edit.php")).unwrap_or("/wp-admin/edit.php").to_string();
    let Some(p) = req
        .f("post_ID")
        .and_then(|i| i.parse::<u32>().ok())
        .and_then(|id| ctx.blog.posts.iter_mut().find(|p| p.id == id))
    else {
        return err(back, "Sorry, you are not allowed to edit this item.");
    };
    let title = req.f("post_title").unwrap_or("").trim();
    if !title.is_empty() {
        p.title = title.to_string();
    }
    if let Some(s) = req.f("post_name").map(slug).filter(|s| !s.is_empty()) {
        p.slug = s;
    }
    if let Some(st) = req.f("_status").filter(|s| matches!(*s, "publish" | "pending" | "draft")) {
        p.status = st.to_string();
    }
    Resp::redirect(back).into()
}

/// GET `post.php?action=trash|untrash|delete`.
pub fn trash_action(ctx: &mut Ctx, id: u32, action: &str) -> Out {
    let Some(idx) = ctx.blog.posts.iter().position(|p| p.id == id) else {
        return err("/wp-admin/edit.php", "Sorry, you are not allowed to move this item to the Trash.");
    };
    let kind = ctx.blog.posts[idx].kind.clone();
    let list = format!("/wp-admin/edit.php?post_type={kind}");
    let noun = if kind == "page" { "page" } else { "post" };
    match action {
        "trash" => {
            ctx.blog.posts[idx].status = "trash".into();
            ok(list, format!("1 {noun} moved to the Trash."))
        }
        "untrash" => {
            ctx.blog.posts[idx].status = "draft".into();
            ok(format!("{list}&post_status=trash"), format!("1 {noun} restored from the Trash."))
        }
        _ => {
            ctx.blog.posts.remove(idx);
            ok(format!("{list}&post_status=trash"), format!("1 {noun} permanently deleted."))
        }
    }
}
