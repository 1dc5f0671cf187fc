//! The WordPress admin's chrome: the document shell, the toolbar (admin
//! bar), the admin menu (the current section's submenu shown, the others as
//! hidden flyouts; v2 renames "Add New" items, W10, and regroups Appearance,
//! W11), notices, list tables, search boxes and pagination.

use skillshift_common::Version;

use crate::kit::layout::{current, document};
use crate::kit::text::esc;
use crate::kit::url::encode_query;

/// (label, href) of a submenu item.
type Sub = (&'static str, &'static str);

/// The admin menu: (key, label, href, submenu).
pub fn menu(v: Version) -> Vec<(&'static str, &'static str, &'static str, Vec<Sub>)> {
    let v2 = v == Version::V2;
    let add = |v1: &'static str, v2l: &'static str| if v2 { v2l } else { v1 };
    let appearance: Vec<Sub> = if v2 {
        vec![("Themes", "themes.php"), ("Editor", "site-editor.php")]
    } else {
        vec![
            ("Themes", "themes.php"),
            ("Customize", "customize.php"),
            ("Widgets", "widgets.php"),
            ("Menus", "nav-menus.php"),
            ("Editor", "theme-editor.php"),
        ]
    };
    vec![
        ("dashboard", "Dashboard", "index.php", vec![("Home", "index.php"), ("Updates", "update-core.php")]),
        (
            "posts",
            "Posts",
            "edit.php",
            vec![
                ("All Posts", "edit.php"),
                (add("Add New", "Add New Post"), "post-new.php"),
                ("Categories", "edit-tags.php?taxonomy=category"),
                ("Tags", "edit-tags.php?taxonomy=post_tag"),
            ],
        ),
        (
            "media",
            "Media",
            "upload.php",
            vec![("Library", "upload.php"), (add("Add New", "Add New Media File"), "media-new.php")],
        ),
        (
            "pages",
            "Pages",
            "edit.php?post_type=page",
            vec![
                ("All Pages", "edit.php?post_type=page"),
                (add("Add New", "Add New Page"), "post-new.php?post_type=page"),
            ],
        ),
        ("comments", "Comments", "edit-comments.php", vec![]),
        ("appearance", "Appearance", "themes.php", appearance),
        (
            "plugins",
            "Plugins",
            "plugins.php",
            vec![("Installed Plugins", "plugins.php"), (add("Add New", "Add New Plugin"), "plugin-install.php")],
        ),
        (
            "users",
            "Users",
            "users.php",
            vec![
                ("All Users", "users.php"),
                (add("Add New", "Add New User"), "user-new.php"),
                (add("Your Profile", "Profile"), "profile.php"),
            ],
        ),
        (
            "tools",
            "Tools",
            "tools.php",
            vec![("Available Tools", "tools.php"), ("Import", "import.php"), ("Export", "export.php")],
        ),
        (
            "settings",
            "Settings",
            "options-general.php",
            vec![
                ("General", "options-general.php"),
                ("Writing", "options-writing.php"),
                ("Reading", "options-reading.php"),
                ("Discussion", "options-discussion.php"),
                ("Media", "options-media.php"),
                ("Permalinks", "options-permalink.php"),
                ("Privacy", "options-privacy.php"),
            ],
        ),
    ]
}

/// Which menu section a screen belongs to.
pub fn section_of(file: &str, post_type: Option<&str>) -> &'static str {
    match file {
        "edit.php" | "post-new.php" | "post.php" if post_type == Some("page") => "pages",
        "edit.php" | "post-new.php" | "post.php" | "edit-tags.php" | "term.php" => "posts",
        "upload.php" | "media-new.php" => "media",
        "edit-comments.php" | "comment.php" => "comments",
        "themes.php" | "customize.php" | "widgets.php" | "nav-menus.php" | "theme-editor.php" | "site-editor.php" => {
            "appearance"
        }
        "plugins.php" | "plugin-install.php" => "plugins",
        "users.php" | "user-new.php" | "user-edit.php" | "profile.php" => "users",
        "tools.php" | "import.php" | "export.php" => "tools",
        f if f.starts_with("options") => "settings",
        _ => "dashboard",
    }
}

/// A notice shown once after a redirect (WordPress's name for a flash).
pub use crate::kit::state::Flash as Notice;

pub fn notice_html(n: &Notice) -> String {
    let (role, class) = if n.error { ("alert", "notice-error") } else { ("status", "notice-success") };
    format!("<div class=\"notice {class} is-dismissible\" role=\"{role}\"><p>{}</p></div>", esc(&n.text))
}

/// The shared page shell; `body_class` distinguishes the admin, the editor and the public site.
pub fn shell(title: &str, body_class: &str, css: &str, body: &str) -> String {
    document("lang=\"en-US\"", title, &[CSS, css], body_class, body)
}

/// The toolbar at the top of every admin screen.
pub fn admin_bar(blogname: &str, pending: usize) -> String {
    format!(
        "<div id=\"wpadminbar\" role=\"navigation\" aria-label=\"Toolbar\"><ul>\
         <li><a href=\"/wp-admin/about.php\" aria-label=\"About WordPress\">W</a></li>\
         <li><a href=\"/\">{}</a></li>\
         <li><a href=\"/wp-admin/edit-comments.php\"><span aria-hidden=\"true\">✉ {pending}</span><span class=\"screen-reader-text\">{pending} Comments in moderation</span></a></li>\
         <li><a href=\"/wp-admin/post-new.php\"><span aria-hidden=\"true\">+</span> New</a></li>\
         <li class=\"right\"><a href=\"/wp-admin/profile.php\">Howdy, admin</a></li>\
         <li class=\"right\"><a href=\"/wp-login.php?action=logout\">Log Out</a></li></ul></div>",
        esc(blogname)
    )
}

/// A complete admin screen: toolbar, admin menu (with `section` current), heading, notice, body.
#[allow(clippy::too_many_arguments)]
pub fn admin_page(
    v: Version,
    section: &str,
    current_href: &str,
    blogname: &str,
    pending: usize,
    h1: &str,
    title_action: &str,
    notice: Option<&Notice>,
    body: &str,
) -> String {
    let mut nav = String::from("<nav id=\"adminmenuwrap\" aria-label=\"Main menu\"><ul id=\"adminmenu\">");
    for (key, label, href, subs) in menu(v) {
        let cur = key == section;
        let bubble = if key == "comments" && pending > 0 {
            format!(" <span class=\"awaiting-mod\" aria-hidden=\"true\">{pending}</span>")
        } else {
            String::new()
        };
        let aria = current(cur);
        nav.push_str(&format!(
            "<li class=\"menu-top{}\"><a href=\"/wp-admin/{href}\"{aria}>{label}{bubble}</a>",
            if cur { " current" } else { "" }
        ));
        if !subs.is_empty() {
            nav.push_str(&format!("<ul class=\"wp-submenu\"{}>", if cur { "" } else { " hidden" }));
            for (l, h) in subs {
                let c = current(cur && h == current_href);
                nav.push_str(&format!("<li><a href=\"/wp-admin/{h}\"{c}>{l}</a></li>"));
            }
            nav.push_str("</ul>");
        }
        nav.push_str("</li>");
    }
    nav.push_str("<li><button type=\"button\" aria-expanded=\"true\" class=\"collapse-button\">Collapse Menu</button></li></ul></nav>");
    let notice = notice.map(notice_html).unwrap_or_default();
    let version = if v == Version::V2 { "6.6" } else { "4.9.8" };
    shell(
        &format!("{h1} ‹ {blogname} — WordPress"),
        "wp-admin",
        "",
        &format!(
            "{}<div id=\"wpwrap\">{nav}<div id=\"wpcontent\"><main id=\"wpbody-content\"><div class=\"wrap\">\
             <h1 class=\"wp-heading-inline\">{}</h1>{title_action}<hr class=\"wp-header-end\">{notice}{body}</div></main>\
             <footer id=\"wpfooter\"><p>Thank you for creating with WordPress.</p><p>Version {version}</p></footer></div></div>",
            admin_bar(blogname, pending),
            esc(h1)
        ),
    )
}

/// A search box for a list screen (`label` e.g. "Search Posts"; hidden fields keep the view).
pub fn search_box(action: &str, label: &str, value: &str, hidden: &[(&str, &str)]) -> String {
    let hidden: String =
        hidden.iter().map(|(k, v)| format!("<input type=\"hidden\" name=\"{k}\" value=\"{}\">", esc(v))).collect();
    format!(
        "<form class=\"search-form\" role=\"search\" aria-label=\"{label}\" method=\"get\" action=\"{action}\">{hidden}\
         <p class=\"search-box\"><label class=\"screen-reader-text\" for=\"search-input\">{label}:</label>\
         <input type=\"search\" id=\"search-input\" name=\"s\" value=\"{}\">\
         <button type=\"submit\" id=\"search-submit\" class=\"button\">{label}</button></p></form>",
        esc(value)
    )
}

/// The item count and pagination links of a list screen; `base` already carries its query.
pub fn tablenav(base: &str, page: usize, pages: usize, total: usize) -> String {
    let sep = if base.contains('?') { '&' } else { '?' };
    let link = |p: usize, label: &str| format!("<a href=\"{base}{sep}paged={p}\">{label}</a>");
    let prev = if page > 1 { link(page - 1, "Previous page") } else { String::new() };
    let next = if page < pages { link(page + 1, "Next page") } else { String::new() };
    format!(
        "<div class=\"tablenav\"><span class=\"displaying-num\"><output aria-label=\"Number of items\">{total}</output> items</span>\
         <nav class=\"pagination-links\" aria-label=\"Pagination\">{prev} <span>{page} of {pages}</span> {next}</nav></div>"
    )
}

/// One row of a list table: the primary cell (holding an element with id `title_id`
/// that names the row), the other cells, and optional HTML after the row (inline edit).
pub struct Row {
    pub primary: String,
    pub title_id: String,
    pub cells: Vec<String>,
    pub after: String,
}

/// A list table; cells are named "<column> <row title>" through `aria-labelledby`.
pub fn list_table(caption: &str, cols: &[(&str, &str)], rows: &[Row]) -> String {
    let mut h = format!(
        "<table class=\"wp-list-table widefat striped\"><caption class=\"screen-reader-text\">{}</caption><thead><tr>",
        esc(caption)
    );
    for (id, label) in cols {
        h.push_str(&format!("<th scope=\"col\" id=\"col-{id}\">{label}</th>"));
    }
    h.push_str("</tr></thead><tbody>");
    if rows.is_empty() {
        h.push_str(&format!("<tr class=\"no-items\"><td colspan=\"{}\">No items found.</td></tr>", cols.len()));
    }
    for r in rows {
        h.push_str(&format!("<tr><td class=\"column-primary\">{}</td>", r.primary));
        for (cell, (cid, _)) in r.cells.iter().zip(cols.iter().skip(1)) {
            h.push_str(&format!("<td aria-labelledby=\"col-{cid} {}\">{cell}</td>", r.title_id));
        }
        h.push_str("</tr>");
        h.push_str(&r.after);
    }
    h.push_str("</tbody></table>");
    h
}

/// `“title”` as WordPress quotes titles in row-action labels.
pub fn quoted(title: &str) -> String {
    format!("“{}”", esc(title))
}

/// A query value, encoded for a link.
pub fn q(s: &str) -> String {
    encode_query(s)
}

const CSS: &str = "body{margin:0;font:13px/1.4 -apple-system,'Segoe UI',Roboto,sans-serif;color:#1d2327;background:#f0f0f1}\
#wpadminbar{background:#1d2327;height:32px}#wpadminbar ul{list-style:none;margin:0;padding:0 8px;display:flex;gap:14px}\
#wpadminbar a{color:#f0f0f1;text-decoration:none;line-height:32px}#wpadminbar .right:first-of-type{margin-left:auto}\
#wpwrap{display:flex;min-height:calc(100vh - 32px)}#adminmenuwrap{background:#1d2327;width:160px;flex:none}\
#adminmenu{list-style:none;margin:0;padding:8px 0}#adminmenu a{display:block;color:#f0f0f1;padding:7px 10px;text-decoration:none}\
#adminmenu .current>a{background:#2271b1}#adminmenu .wp-submenu{list-style:none;padding:4px 0;margin:0;background:#2c3338}\
#adminmenu .wp-submenu[hidden]{display:none}#adminmenu .wp-submenu a{padding:5px 12px;color:#c3c4c7}\
#adminmenu .awaiting-mod{background:#d63638;border-radius:9px;padding:0 6px;font-size:11px}\
.collapse-button{background:none;border:0;color:#a7aaad;padding:8px 10px}#wpcontent{flex:1;min-width:0}\
.wrap{padding:10px 20px}.wp-heading-inline{display:inline-block;font-size:23px;font-weight:400;margin:8px 8px 4px 0}\
.page-title-action{border:1px solid #2271b1;color:#2271b1;border-radius:3px;padding:4px 8px;text-decoration:none}\
.notice{background:#fff;border-left:4px solid #00a32a;padding:1px 12px;margin:8px 0}.notice-error{border-color:#d63638}\
.wp-list-table{width:100%;border-collapse:collapse;background:#fff;border:1px solid #c3c4c7}\
.wp-list-table th{text-align:left;padding:8px;border-bottom:1px solid #c3c4c7}.wp-list-table td{padding:8px;vertical-align:top}\
.striped>tbody>tr:nth-child(odd){background:#f6f7f7}.row-actions{color:#a7aaad;font-size:12px}.row-actions a,.row-actions button{color:#2271b1}\
.button-link{background:none;border:0;padding:0;cursor:pointer;font:inherit}.screen-reader-text{position:absolute;left:-9999px}\
.subsubsub{list-style:none;padding:0;display:flex;gap:8px}.search-box{text-align:right}.tablenav{display:flex;justify-content:space-between;margin:6px 0}\
.button,button{border:1px solid #2271b1;color:#2271b1;background:#f6f7f7;border-radius:3px;padding:4px 10px;cursor:pointer}\
.button-primary{background:#2271b1;color:#fff}.form-table th{text-align:left;width:200px;padding:12px 10px 12px 0}\
.form-table input[type=text],.form-table input[type=email],.form-table select,.form-table textarea{width:25em;padding:4px}\
#wpfooter{padding:10px 20px;color:#50575e}.postbox{background:#fff;border:1px solid #c3c4c7;margin-bottom:16px;padding:0 12px 12px}\
.inline-edit-row td{background:#fff;padding:12px}[role=dialog]{position:fixed;inset:15vh 25vw auto;background:#fff;padding:32px;\
box-shadow:0 10px 40px #0008;z-index:99;border-radius:4px}[role=dialog][hidden]{display:none}\
#post-body{display:grid;grid-template-columns:1fr 300px;gap:0 20px;align-items:start}#post-body>*{grid-column:1}\
#post-body>aside{grid-column:2;grid-row:1/span 4}#titlediv label{display:block;color:#646970;margin-bottom:4px}\
#titlediv input{width:100%;box-sizing:border-box;font-size:1.6em;padding:4px 8px}#content{width:100%;box-sizing:border-box}\
.postbox h2{font-size:14px}.category-tabs{list-style:none;padding:0;display:flex;gap:10px}#category-all{list-style:none;padding:0}\
.components-panel__body-title button{width:100%;text-align:left;border:0;border-top:1px solid #ddd;border-radius:0;background:none;\
padding:12px 0;font-weight:600;color:#1e1e1e}";
