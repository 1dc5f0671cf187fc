//! The site-wide admin screens: the Settings screens (`options-*.php`, saved
//! through `options.php`), Appearance (v1 Customize / Widgets / Menus / theme
//! file Editor; v2 the full-screen site Editor, W11), and the screens this
//! fixture shows only as a heading (Media, Plugins, Tools, Updates).

use crate::kit::layout::nav_item;
use crate::kit::text::esc;
use crate::kit::web::{Req, Resp};

use super::pages_admin::role_select;
use super::ui::section_of;
use super::{err, ok, Ctx, Out};

/// `options-*.php` screens, saved by POST to `options.php`.
pub fn settings(ctx: &mut Ctx, req: &Req, file: &str) -> Out {
    if file == "options.php" && req.post {
        let page = req.f("option_page").unwrap_or("general");
        for key in [
            "blogname",
            "blogdescription",
            "admin_email",
            "posts_per_page",
            "default_role",
            "date_format",
            "default_comment_status",
            "comment_moderation",
        ] {
            if let Some(v) = req.f(key) {
                if key == "posts_per_page" && v.trim().parse::<u32>().map_or(true, |n| n == 0) {
                    return err(
                        format!("/wp-admin/options-{page}.php"),
                        "Blog pages show at most: please enter a number of at least 1.",
                    );
                }
                ctx.blog.options.insert(key.to_string(), v.trim().to_string());
            }
        }
        return ok(format!("/wp-admin/options-{page}.php?settings-updated=true"), "Settings saved.");
    }
    let o = |k: &str| esc(ctx.blog.opt(k));
    let text = |id: &str, label: &str| {
        format!("<tr><th><label for=\"{id}\">{label}</label></th><td><input type=\"text\" id=\"{id}\" name=\"{id}\" value=\"{}\"></td></tr>", o(id))
    };
    let (page, title, rows) = match file {
        "options-general.php" => (
            "general",
            "General Settings",
            format!(
                "{}{}<tr><th><label for=\"siteurl\">WordPress Address (URL)</label></th><td><input type=\"text\" id=\"siteurl\" value=\"{}\" disabled></td></tr>{}\
                 <tr><th><label for=\"default_role\">New User Default Role</label></th><td>{}</td></tr>{}",
                text("blogname", "Site Title"),
                text("blogdescription", "Tagline"),
                o("siteurl"),
                text("admin_email", "Administration Email Address"),
                role_select(ctx.blog.opt("default_role")).replace("id=\"role\" name=\"role\"", "id=\"default_role\" name=\"default_role\""),
                text("date_format", "Date Format")
            ),
        ),
        "options-reading.php" => (
            "reading",
            "Reading Settings",
            format!(
                "<tr><th><label for=\"posts_per_page\">Blog pages show at most</label></th><td><input type=\"number\" id=\"posts_per_page\" name=\"posts_per_page\" min=\"1\" value=\"{}\"> posts</td></tr>",
                o("posts_per_page")
            ),
        ),
        "options-discussion.php" => (
            "discussion",
            "Discussion Settings",
            format!(
                "<tr><th><label for=\"comment_moderation\">Comment must be manually approved</label></th><td><select id=\"comment_moderation\" name=\"comment_moderation\">\
                 <option value=\"1\"{}>Yes</option><option value=\"0\"{}>No</option></select></td></tr>",
                if ctx.blog.opt("comment_moderation") == "1" { " selected" } else { "" },
                if ctx.blog.opt("comment_moderation") == "0" { " selected" } else { "" }
            ),
        ),
        "options-writing.php" => ("writing", "Writing Settings", "<tr><th>Default Post Category</th><td>Uncategorized</td></tr>".to_string()),
        "options-media.php" => ("media", "Media Settings", "<tr><th>Thumbnail size</th><td>150 × 150</td></tr>".to_string()),
        "options-permalink.php" => ("permalink", "Permalink Settings", "<tr><th>Common Settings</th><td>Day and name: /%year%/%monthnum%/%day%/%postname%/</td></tr>".to_string()),
        "options-privacy.php" => ("privacy", "Privacy", "<tr><th>Privacy Policy page</th><td>Privacy Policy</td></tr>".to_string()),
        _ => return simple(ctx, file),
    };
    let body = format!(
        "<form method=\"post\" action=\"/wp-admin/options.php\" aria-label=\"{title}\"><input type=\"hidden\" name=\"option_page\" value=\"{page}\">\
         <table class=\"form-table\" role=\"presentation\">{rows}</table><p class=\"submit\"><button type=\"submit\" class=\"button button-primary\">Save Changes</button></p></form>"
    );
    ctx.page("settings", file, title, "", &body).into()
}

/// The Appearance screens (W11).
pub fn appearance(ctx: &Ctx, req: &Req, file: &str) -> Out {
    let v2 = ctx.v2();
    let (title, body) = match (file, v2) {
        ("themes.php", _) => {
            let theme = if v2 { "Twenty Twenty-Four" } else { "Twenty Seventeen" };
            ("Themes", format!("<ul aria-label=\"Installed themes\"><li><h2>Active: {theme}</h2>{}</li><li><h2>Twenty Twenty-Two</h2></li></ul>",
                if v2 { "<a href=\"/wp-admin/site-editor.php\" class=\"button\" aria-label=\"Customize Twenty Twenty-Four\">Customize</a>" } else { "<a href=\"/wp-admin/customize.php\" class=\"button\" aria-label=\"Customize Twenty Seventeen\">Customize</a>" }))
        }
        ("customize.php", false) => ("Customize", "<section aria-label=\"Customizer\"><ul><li><button type=\"button\">Site Identity</button></li><li><button type=\"button\">Colors</button></li><li><button type=\"button\">Header Media</button></li><li><button type=\"button\">Menus</button></li><li><button type=\"button\">Widgets</button></li></ul><button type=\"button\" class=\"button-primary\">Publish</button></section>".to_string()),
        ("widgets.php", false) => ("Widgets", "<h2>Blog Sidebar</h2><ul><li>Search</li><li>Recent Posts</li><li>Recent Comments</li><li>Archives</li><li>Categories</li></ul>".to_string()),
        ("nav-menus.php", false) => ("Menus", "<form aria-label=\"Edit Menus\"><label for=\"menu-name\">Menu Name</label> <input type=\"text\" id=\"menu-name\" value=\"Top Menu\"><h2>Menu Structure</h2><ul><li>Home</li><li>About</li><li>Contact</li></ul><button type=\"button\" class=\"button-primary\">Save Menu</button></form>".to_string()),
        ("theme-editor.php", false) => ("Edit Themes", "<p role=\"alert\">Heads up! You appear to be making direct edits to your theme in the WordPress dashboard.</p><label for=\"newcontent\">Selected file content:</label><textarea id=\"newcontent\">/* Theme Name: Twenty Seventeen */</textarea><button type=\"button\" class=\"button-primary\">Update File</button>".to_string()),
        ("site-editor.php", true) => return site_editor(ctx, req).into(),
        _ => return simple(ctx, file),
    };
    ctx.page("appearance", file, title, "", &body).into()
}

/// v2's site editor (full screen, like the block editor).
fn site_editor(ctx: &Ctx, req: &Req) -> Resp {
    let path = req.q("path").unwrap_or("");
    let items = [
        ("/navigation", "Navigation"),
        ("/wp_global_styles", "Styles"),
        ("/page", "Pages"),
        ("/wp_template", "Templates"),
        ("/patterns", "Patterns"),
    ];
    let nav: String =
        items.iter().map(|(p, l)| nav_item(&format!("/wp-admin/site-editor.php?path={p}"), l, *p == path)).collect();
    let heading = items.iter().find(|(p, _)| *p == path).map(|(_, l)| *l).unwrap_or("Design");
    let content = match path {
        "/navigation" => "<ul aria-label=\"Navigation menus\"><li>Header navigation</li><li>Footer navigation</li></ul>",
        "/wp_template" => "<ul aria-label=\"Templates\"><li>Blog Home</li><li>Single Posts</li><li>Pages</li><li>Archive</li><li>404</li></ul>",
        "/patterns" => "<ul aria-label=\"Patterns\"><li>Header</li><li>Footer</li><li>Sidebar</li></ul>",
        "/wp_global_styles" => "<ul aria-label=\"Style variations\"><li>Default</li><li>Ember</li><li>Fossil</li></ul>",
        _ => "<p>Customize the look of your entire site with blocks.</p>",
    };
    Resp::Page(super::ui::shell(
        &format!("{heading} ‹ Editor ‹ {} — WordPress", ctx.blog.opt("blogname")),
        "site-editor-php is-fullscreen-mode",
        ".site-editor{display:flex;min-height:100vh}.site-editor nav{background:#1e1e1e;width:300px;padding:16px}.site-editor nav a{color:#ddd;display:block;padding:6px}",
        &format!(
            "<div class=\"site-editor\"><nav aria-label=\"Design\"><a href=\"/wp-admin/\" aria-label=\"Go to the Dashboard\">W</a><h1>Design</h1><ul>{nav}</ul></nav>\
             <main><h2>{heading}</h2>{content}</main></div>"
        ),
    ))
}

/// A screen this fixture does not model in depth: its heading in the right menu section.
pub fn simple(ctx: &Ctx, file: &str) -> Out {
    let title = match file {
        "upload.php" => "Media Library",
        "media-new.php" => "Upload New Media",
        "plugins.php" => "Plugins",
        "plugin-install.php" => "Add Plugins",
        "tools.php" => "Tools",
        "import.php" => "Import",
        "export.php" => "Export",
        "update-core.php" => "WordPress Updates",
        "about.php" => "About WordPress",
        _ => {
            return Resp::NotFound(super::ui::shell(
                "Not Found",
                "wp-admin",
                "",
                "<main><h1>Sorry, you are not allowed to access this page.</h1></main>",
            ))
            .into()
        }
    };
    ctx.page(section_of(file, None), file, title, "", "<p>Nothing to show here yet.</p>").into()
}
