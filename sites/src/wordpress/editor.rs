//! The post and page editors (`post.php?post=N&action=edit`, `post-new.php`)
//! and their save handler. v1 is the classic editor: "Enter title here", the
//! Publish box, the Categories box with "All Categories" / "Most Used", the
//! Tags box with an "Add" button. v2 is the block editor, full screen without
//! the admin menu (W9): the "Welcome to the Block Editor" guide (W8), "Add
//! title" (W1), "Publish" opening a pre-publish panel with a second
//! "Publish" (W2), "Save" for published posts (W3), the settings sidebar
//! with "Post"/"Block" tabs (W4, W5), collapsible Categories (W6) and a Tags
//! token field (W7).

use crate::kit::text::{esc, slug};
use crate::kit::web::{Req, Resp};

use super::data::{Post, Term};
use super::ui;
use super::{err, ok, Ctx, Out};

pub fn route(ctx: &mut Ctx, req: &Req, file: &str) -> Out {
    if file == "post.php" && req.post {
        return save(ctx, req);
    }
    if file == "post-new.php" {
        let kind = if req.q("post_type") == Some("page") { "page" } else { "post" };
        return editor(ctx, None, kind, &req_url(req)).into();
    }
    let Some(id) = req.q("post").and_then(|p| p.parse::<u32>().ok()) else {
        return err("/wp-admin/edit.php", "Sorry, you are not allowed to edit this item.");
    };
    match req.q("action") {
        Some(a @ ("trash" | "untrash" | "delete")) => super::pages_posts::trash_action(ctx, id, a),
        _ => match ctx.blog.post(id).cloned() {
            Some(p) if p.status == "trash" => err(
                "/wp-admin/edit.php?post_status=trash",
                "You cannot edit this item because it is in the Trash. Please restore it and try again.",
            ),
            Some(p) => editor(ctx, Some(&p), &p.kind.clone(), &req_url(req)).into(),
            None => {
                err("/wp-admin/edit.php", "You attempted to edit an item that doesn’t exist. Perhaps it was deleted?")
            }
        },
    }
}

fn req_url(req: &Req) -> String {
    let q: Vec<String> = req.query.iter().map(|(k, v)| format!("{k}={}", ui::q(v))).collect();
    if q.is_empty() {
        req.path.clone()
    } else {
        format!("{}?{}", req.path, q.join("&"))
    }
}

fn checkboxes(terms: &[Term], chosen: &[u32]) -> String {
    terms
        .iter()
        .map(|t| {
            let c = if chosen.contains(&t.id) { " checked" } else { "" };
            format!(
                "<li><label><input type=\"checkbox\" name=\"post_category[]\" value=\"{}\"{c}> {}</label></li>",
                t.id,
                esc(&t.name)
            )
        })
        .collect()
}

fn tag_list(ctx: &Ctx, ids: &[u32], v2: bool) -> String {
    let items: String = ids
        .iter()
        .filter_map(|id| ctx.blog.tags.iter().find(|t| t.id == *id))
        .map(|t| {
            let label = if v2 { format!("Remove {}", esc(&t.name)) } else { format!("Remove term: {}", esc(&t.name)) };
            format!("<li><button type=\"submit\" name=\"removetag\" value=\"{}\" class=\"button-link\" aria-label=\"{label}\">ⓧ</button> {}</li>", t.id, esc(&t.name))
        })
        .collect();
    format!("<ul class=\"tagchecklist\" aria-label=\"Tags of this post\">{items}</ul>")
}

fn editor(ctx: &Ctx, p: Option<&Post>, kind: &str, url: &str) -> Resp {
    if ctx.v2() {
        return block_editor(ctx, p, kind, url);
    }
    let noun = if kind == "page" { "Page" } else { "Post" };
    let h1 = if p.is_some() { format!("Edit {noun}") } else { format!("Add New {noun}") };
    let published = p.is_some_and(|p| p.status == "publish");
    let status_label = match p.map(|p| p.status.as_str()) {
        Some("publish") => "Published",
        Some("pending") => "Pending Review",
        _ => "Draft",
    };
    let hidden_id =
        p.map(|p| format!("<input type=\"hidden\" name=\"post_ID\" value=\"{}\">", p.id)).unwrap_or_default();
    let permalink = p
        .filter(|p| p.status == "publish")
        .map(|p| {
            format!("<p id=\"edit-slug-box\"><strong>Permalink:</strong> <a href=\"{0}\">{0}</a></p>", p.permalink())
        })
        .unwrap_or_default();
    let main_button = if published {
        "<button type=\"submit\" name=\"save\" value=\"update\" class=\"button button-primary\">Update</button>"
    } else {
        "<button type=\"submit\" name=\"publish\" value=\"publish\" class=\"button button-primary\">Publish</button>"
    };
    let draft_button = if published {
        ""
    } else {
        "<button type=\"submit\" name=\"save\" value=\"draft\" class=\"button\">Save Draft</button>"
    };
    let trash = p
        .map(|p| {
            format!(
                "<a class=\"submitdelete\" href=\"/wp-admin/post.php?post={}&action=trash\">Move to Trash</a>",
                p.id
            )
        })
        .unwrap_or_default();
    let publish_box = format!(
        "<div class=\"postbox\" id=\"submitdiv\"><h2>Publish</h2>{draft_button} <a href=\"/?p={id}&preview=true\" class=\"button\">Preview</a>\
         <p>Status: <strong>{status_label}</strong> <button type=\"button\" class=\"button-link\" aria-expanded=\"false\" aria-controls=\"post-status-select\" aria-label=\"Edit status\">Edit</button></p>\
         <div id=\"post-status-select\" hidden><label for=\"post_status\">Set status</label> <select id=\"post_status\" name=\"post_status\">\
         <option value=\"\">(unchanged)</option><option value=\"pending\">Pending Review</option><option value=\"draft\">Draft</option></select></div>\
         <p>Visibility: <strong>Public</strong> <button type=\"button\" class=\"button-link\" aria-expanded=\"false\" aria-controls=\"post-visibility-select\" aria-label=\"Edit visibility\">Edit</button></p>\
         <div id=\"post-visibility-select\" hidden><label><input type=\"radio\" name=\"visibility\" value=\"public\" checked> Public</label> \
         <label><input type=\"radio\" name=\"visibility\" value=\"private\"> Private</label></div>\
         <p>{} <button type=\"button\" class=\"button-link\" aria-expanded=\"false\" aria-controls=\"timestampdiv\" aria-label=\"Edit date and time\">Edit</button></p>\
         <div id=\"timestampdiv\" hidden><p>Date: {}</p></div>\
         <div id=\"major-publishing-actions\">{trash} {main_button}</div></div>",
        if published { format!("Published on: <strong>{}</strong>", p.map(|p| p.date.clone()).unwrap_or_default()) } else { "Publish <strong>immediately</strong>".into() },
        p.map(|p| p.date.clone()).unwrap_or_else(|| "2026-11-29".into()),
        id = p.map(|p| p.id).unwrap_or(0),
    );
    let boxes = if kind == "post" {
        let chosen = p.map(|p| p.categories.clone()).unwrap_or_default();
        format!(
            "<div class=\"postbox\" id=\"categorydiv\"><h2>Categories</h2><input type=\"hidden\" name=\"cats_present\" value=\"1\">\
             <ul class=\"category-tabs\"><li><a href=\"#category-all\">All Categories</a></li><li><a href=\"#category-pop\">Most Used</a></li></ul>\
             <ul id=\"category-all\" aria-label=\"All Categories\">{}</ul>\
             <button type=\"button\" class=\"button-link\" aria-expanded=\"false\" aria-controls=\"category-add\">+ Add New Category</button>\
             <div id=\"category-add\" hidden><label for=\"newcategory\">New Category Name</label> <input type=\"text\" id=\"newcategory\" name=\"newcat\">\
             <button type=\"submit\" name=\"op\" value=\"addcat\" class=\"button\">Add New Category</button></div></div>\
             <div class=\"postbox\" id=\"tagsdiv-post_tag\"><h2>Tags</h2>\
             <label for=\"new-tag-post_tag\" class=\"screen-reader-text\">Add New Tag</label> \
             <input type=\"text\" id=\"new-tag-post_tag\" name=\"newtag\" aria-describedby=\"new-tag-desc\"> \
             <button type=\"submit\" name=\"op\" value=\"addtag\" class=\"button\">Add</button>\
             <p class=\"howto\" id=\"new-tag-desc\">Separate tags with commas</p>{}\
             <p><a href=\"#tagcloud-post_tag\">Choose from the most used tags</a></p></div>",
            checkboxes(&ctx.blog.categories, &chosen),
            tag_list(ctx, &p.map(|p| p.tags.clone()).unwrap_or_default(), false)
        )
    } else {
        String::new()
    };
    let body = format!(
        "<form name=\"post\" id=\"post\" method=\"post\" action=\"/wp-admin/post.php\" aria-label=\"{h1}\">{hidden_id}\
         <input type=\"hidden\" name=\"post_type\" value=\"{kind}\"><div id=\"post-body\">\
         <div id=\"titlediv\"><label id=\"title-prompt-text\" for=\"title\">Enter title here</label>\
         <input type=\"text\" name=\"post_title\" id=\"title\" size=\"30\" value=\"{title}\" autocomplete=\"off\"></div>{permalink}\
         <div id=\"postdivrich\"><p><button type=\"button\" class=\"button\">Add Media</button> \
         <button type=\"button\" aria-pressed=\"true\">Visual</button> <button type=\"button\" aria-pressed=\"false\">Text</button></p>\
         <label for=\"content\" class=\"screen-reader-text\">Post content</label><textarea id=\"content\" name=\"content\" rows=\"14\" cols=\"40\">{content}</textarea></div>\
         <aside id=\"postbox-container-1\" aria-label=\"{noun} settings\">{publish_box}{boxes}</aside></div></form>",
        title = esc(p.map(|p| p.title.as_str()).unwrap_or("")),
        content = esc(p.map(|p| p.content.as_str()).unwrap_or("")),
    );
    let new_href = if kind == "page" { "post-new.php?post_type=page" } else { "post-new.php" };
    let section = if kind == "page" { "pages" } else { "posts" };
    let current = if p.is_some() { "" } else { new_href };
    ctx.page(
        section,
        current,
        &h1,
        &format!("<a href=\"/wp-admin/{new_href}\" class=\"page-title-action\">Add New</a>"),
        &body,
    )
}

fn block_editor(ctx: &Ctx, p: Option<&Post>, kind: &str, url: &str) -> Resp {
    let noun = if kind == "page" { "Page" } else { "Post" };
    let published = p.is_some_and(|p| p.status == "publish");
    let welcome = if ctx.welcome_done {
        String::new()
    } else {
        format!(
            "<div role=\"dialog\" aria-modal=\"true\" aria-labelledby=\"welcome-h\" class=\"edit-post-welcome-guide\" id=\"welcome-guide\">\
             <button type=\"button\" aria-label=\"Close\" data-closes>×</button><h1 id=\"welcome-h\">Welcome to the Block Editor</h1>\
             <p>In the WordPress editor, each paragraph, image, or video is presented as a distinct “block” of content.</p>\
             <form method=\"post\" action=\"/wp-admin/admin-post.php?action=dismiss-welcome\"><input type=\"hidden\" name=\"back\" value=\"{}\">\
             <button type=\"submit\" class=\"button button-primary\">Get started</button></form></div>",
            esc(url)
        )
    };
    let list = if kind == "page" { "/wp-admin/edit.php?post_type=page" } else { "/wp-admin/edit.php" };
    let publish_control = if published {
        "<button type=\"button\" name=\"switch\" class=\"button\" aria-expanded=\"false\" aria-controls=\"switch-draft\">Switch to draft</button>\
         <button type=\"submit\" name=\"save\" value=\"update\" class=\"button button-primary\">Save</button>"
            .to_string()
    } else {
        "<button type=\"submit\" name=\"save\" value=\"draft\" class=\"button\">Save draft</button> \
         <button type=\"button\" class=\"button button-primary\" aria-expanded=\"false\" aria-controls=\"prepublish\">Publish</button>"
            .to_string()
    };
    let notice = ctx
        .notice
        .as_ref()
        .map(|n| {
            format!(
                "<div class=\"components-snackbar\" role=\"{}\">{}</div>",
                if n.error { "alert" } else { "status" },
                esc(&n.text)
            )
        })
        .unwrap_or_default();
    let content = p.map(|p| p.content.as_str()).unwrap_or("");
    let block_label = if content.is_empty() {
        "Empty block; start writing or type forward slash to choose a block"
    } else {
        "Block: Paragraph"
    };
    let panel = |id: &str, label: &str, inner: &str| {
        format!("<h2 class=\"components-panel__body-title\"><button type=\"button\" aria-expanded=\"false\" aria-controls=\"panel-{id}\">{label}</button></h2><div id=\"panel-{id}\" hidden>{inner}</div>")
    };
    let taxonomies = if kind == "post" {
        let chosen = p.map(|p| p.categories.clone()).unwrap_or_default();
        format!(
            "{}{}",
            panel(
                "categories",
                "Categories",
                &format!(
                    "<input type=\"hidden\" name=\"cats_present\" value=\"1\"><ul aria-label=\"Categories\">{}</ul>\
                     <button type=\"button\" class=\"button-link\" aria-expanded=\"false\" aria-controls=\"new-cat-form\">Add New Category</button>\
                     <div id=\"new-cat-form\" hidden><label for=\"newcat\">New Category Name</label> <input type=\"text\" id=\"newcat\" name=\"newcat\">\
                     <button type=\"submit\" name=\"op\" value=\"addcat\">Add New Category</button></div>",
                    checkboxes(&ctx.blog.categories, &chosen)
                )
            ),
            panel(
                "tags",
                "Tags",
                &format!(
                    "{}<label for=\"tags-token\">Add New Tag</label> <input type=\"text\" id=\"tags-token\" name=\"newtag\" aria-describedby=\"tags-help\">\
                     <p id=\"tags-help\">Separate with commas or the Enter key.</p>",
                    tag_list(ctx, &p.map(|p| p.tags.clone()).unwrap_or_default(), true)
                )
            )
        )
    } else {
        String::new()
    };
    let form = format!(
        "<form method=\"post\" action=\"/wp-admin/post.php\" aria-label=\"Editor\" class=\"block-editor\">\
         {hidden_id}<input type=\"hidden\" name=\"post_type\" value=\"{kind}\"><input type=\"hidden\" name=\"editor\" value=\"block\">\
         <div role=\"region\" aria-label=\"Editor top bar\" class=\"edit-post-header\"><a href=\"{list}\" aria-label=\"View {noun}s\">W</a> \
         <button type=\"button\" aria-label=\"Toggle block inserter\">+</button> <button type=\"button\">Undo</button> <button type=\"button\">Redo</button>\
         <span class=\"spacer\"></span>{publish_control} \
         <button type=\"button\" aria-expanded=\"true\" aria-controls=\"editor-sidebar\">Settings</button> <button type=\"button\" aria-haspopup=\"menu\" aria-expanded=\"false\" aria-controls=\"options-menu\">Options</button>\
         <ul role=\"menu\" id=\"options-menu\" hidden><li><a role=\"menuitem\" href=\"{list}\">Exit editor</a></li></ul></div>\
         <div id=\"prepublish\" role=\"region\" aria-label=\"Editor publish\" hidden><p><strong>Are you ready to publish?</strong></p>\
         <p>Double-check your settings before publishing.</p><button type=\"submit\" name=\"publish\" value=\"publish\" class=\"button button-primary\">Publish</button> \
         <button type=\"button\" aria-expanded=\"true\" aria-controls=\"prepublish\">Cancel</button></div>\
         <div id=\"switch-draft\" role=\"region\" aria-label=\"Switch to draft\" hidden><p>Are you sure you want to unpublish this post?</p>\
         <button type=\"submit\" name=\"save\" value=\"draft\">OK</button></div>\
         <div role=\"region\" aria-label=\"Editor content\" class=\"editor-styles-wrapper\">{notice}\
         <textarea id=\"post-title-0\" name=\"post_title\" aria-label=\"Add title\" rows=\"1\" class=\"editor-post-title\">{title}</textarea>\
         <textarea id=\"block-1\" name=\"content\" aria-label=\"{block_label}\" rows=\"10\" class=\"block-editor-rich-text\">{content_esc}</textarea></div>\
         <div role=\"region\" aria-label=\"Editor settings\" id=\"editor-sidebar\" class=\"interface-complementary-area\">\
         <div class=\"tabs\"><button type=\"button\" aria-expanded=\"true\" aria-controls=\"sidebar-doc\">{noun}</button> \
         <button type=\"button\" aria-expanded=\"false\" aria-controls=\"sidebar-block\">Block</button></div>\
         <div id=\"sidebar-doc\"><h2>Summary</h2><p><span>Visibility:</span> <button type=\"button\" aria-expanded=\"false\" aria-controls=\"vis-pop\">Public</button></p>\
         <div id=\"vis-pop\" hidden><label><input type=\"radio\" name=\"visibility\" value=\"public\" checked> Public</label> <label><input type=\"radio\" name=\"visibility\" value=\"private\"> Private</label></div>\
         <p><span>Publish:</span> <button type=\"button\" aria-expanded=\"false\" aria-controls=\"date-pop\">{when}</button></p><div id=\"date-pop\" hidden><p>{date}</p></div>\
         {taxonomies}{featured}{excerpt}</div>\
         <div id=\"sidebar-block\" hidden><h2>Paragraph</h2><p>Start with the basic building block of all narrative.</p></div></div></form>",
        hidden_id = p.map(|p| format!("<input type=\"hidden\" name=\"post_ID\" value=\"{}\">", p.id)).unwrap_or_default(),
        title = esc(p.map(|p| p.title.as_str()).unwrap_or("")),
        content_esc = esc(content),
        when = if published { p.map(|p| p.date.clone()).unwrap_or_default() } else { "Immediately".into() },
        date = p.map(|p| p.date.clone()).unwrap_or_else(|| "2026-11-29".into()),
        featured = panel("featured", "Featured image", "<button type=\"button\">Set featured image</button>"),
        excerpt = panel("excerpt", "Excerpt", "<label for=\"excerpt\">Write an excerpt (optional)</label> <textarea id=\"excerpt\" name=\"excerpt\"></textarea>"),
    );
    let title = if p.is_some() { format!("Edit {noun}") } else { format!("Add New {noun}") };
    Resp::Page(ui::shell(
        &format!("{title} ‹ {} — WordPress", ctx.blog.opt("blogname")),
        "block-editor-page is-fullscreen-mode",
        ".block-editor{display:grid;grid-template-columns:1fr 280px;grid-template-rows:auto auto 1fr;min-height:100vh;background:#fff}\
         .edit-post-header{grid-column:1/3;display:flex;gap:8px;align-items:center;padding:8px 16px;border-bottom:1px solid #ddd}.spacer{flex:1}\
         #prepublish,#switch-draft{grid-column:1/3;background:#f0f6fc;padding:12px 16px}.editor-styles-wrapper{padding:40px 12%}\
         .editor-post-title{width:100%;font-size:36px;border:0;font-family:serif}.block-editor-rich-text{width:100%;border:0;font:18px/1.6 serif}\
         .interface-complementary-area{border-left:1px solid #ddd;padding:12px}.components-snackbar{position:fixed;bottom:24px;left:24px;background:#1e1e1e;color:#fff;padding:12px 20px}",
        &format!("{welcome}<main id=\"editor\">{form}</main>"),
    ))
}

/// POST `post.php`: both editors' save, publish, tag and category buttons.
fn save(ctx: &mut Ctx, req: &Req) -> Out {
    let kind = if req.f("post_type") == Some("page") { "page" } else { "post" };
    let title = req.f("post_title").unwrap_or("").trim().to_string();
    let b = &mut *ctx.blog;
    let id = match req.f("post_ID").and_then(|i| i.parse::<u32>().ok()) {
        Some(id) if b.post(id).is_some() => id,
        Some(_) => {
            return err(
                "/wp-admin/edit.php",
                "You attempted to edit an item that doesn’t exist. Perhaps it was deleted?",
            )
        }
        None => {
            let id = b.posts.iter().map(|p| p.id).max().unwrap_or(0) + 1;
            b.posts.push(Post {
                id,
                kind: kind.into(),
                title: String::new(),
                slug: String::new(),
                content: String::new(),
                status: "draft".into(),
                author: 1,
                date: "2026-11-29".into(),
                categories: if kind == "post" { vec![1] } else { vec![] },
                tags: vec![],
            });
            id
        }
    };
    let mut new_tags = Vec::new();
    for name in req.f("newtag").unwrap_or("").split(',') {
        if let Some(t) = b.tag_id(name) {
            new_tags.push(t);
        }
    }
    let new_cat = req.f("newcat").map(str::trim).filter(|n| !n.is_empty() && req.f("op") == Some("addcat")).map(|n| {
        if let Some(c) = b.categories.iter().find(|c| c.name.eq_ignore_ascii_case(n)) {
            return c.id;
        }
        let cid = b.categories.iter().map(|c| c.id).max().unwrap_or(0) + 1;
        b.categories.push(Term {
            id: cid,
            name: n.to_string(),
            slug: slug(n),
            parent: None,
            description: String::new(),
        });
        cid
    });
    let Some(p) = b.posts.iter_mut().find(|p| p.id == id) else {
        return err("/wp-admin/edit.php", "You attempted to edit an item that doesn’t exist.");
    };
    p.title = title;
    if p.slug.is_empty() || p.status != "publish" {
        p.slug = slug(&p.title);
    }
    if let Some(c) = req.f("content") {
        p.content = c.to_string();
    }
    if req.f("cats_present").is_some() {
        p.categories = req.f_all("post_category[]").iter().filter_map(|c| c.parse().ok()).collect();
        if p.categories.is_empty() {
            p.categories.push(1);
        }
    }
    if let Some(c) = new_cat {
        p.categories.push(c);
    }
    for t in new_tags {
        if !p.tags.contains(&t) {
            p.tags.push(t);
        }
    }
    if let Some(r) = req.f("removetag").and_then(|r| r.parse::<u32>().ok()) {
        p.tags.retain(|t| *t != r);
        let back = format!("/wp-admin/post.php?post={id}&action=edit");
        return Resp::redirect(back).into();
    }
    let noun = if kind == "page" { "Page" } else { "Post" };
    let back = format!("/wp-admin/post.php?post={id}&action=edit");
    if req.f("op").is_some() {
        return Resp::redirect(back).into();
    }
    if req.f("publish").is_some() {
        p.status = "publish".into();
        return ok(back, format!("{noun} published."));
    }
    match (req.f("save"), req.f("post_status").filter(|s| matches!(*s, "pending" | "draft"))) {
        (_, Some(st)) => {
            p.status = st.into();
            ok(back, format!("{noun} draft updated."))
        }
        (Some("draft"), None) => {
            p.status = "draft".into();
            ok(back, format!("{noun} draft updated."))
        }
        _ if p.status == "publish" => ok(back, format!("{noun} updated.")),
        _ => ok(back, format!("{noun} draft updated.")),
    }
}
