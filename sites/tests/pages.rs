//! Every page a user reaches in the Magento admin and in WordPress (each
//! menu item and the main screens of seeded records, in both versions) has
//! what the sites contract asks of a page: status 200, the behaviours
//! script, a `main`, a heading, column headers on tables, and an accessible
//! name on every control and link in the simulator's accessibility tree.

use skillshift_common::{Site, Version};
use skillshift_sites::sim::Browser;

const ORIGIN: &str = "http://fixture.test";

/// Logs in and loads each of `paths`, checking what every page must have:
/// status 200, the behaviours script, one `main`, a heading, and a name on
/// every control and link in the accessibility tree (with any open modal
/// closed first). Returns the problems found.
async fn lint(site: Site, version: Version, paths: &[String]) -> Vec<String> {
    let (router, app, _) = skillshift_sites::site_router(site, version);
    app.reset();
    let mut b = Browser::new(router, ORIGIN);
    let login = b.run(&app.login_steps()).await;
    let mut bad = Vec::new();
    if let Some((i, e)) = login.error {
        return vec![format!("{site} {version}: login step {i}: {e}")];
    }
    for path in paths {
        if let Err(e) = b.goto(path).await {
            bad.push(format!("{path}: {e}"));
            continue;
        }
        let Some(page) = b.page() else { continue };
        if page.status != 200 {
            bad.push(format!("{path}: status {}", page.status));
        }
        if page.query("script[src='/static/behaviors.js']").ok().flatten().is_none() {
            bad.push(format!("{path}: no behaviors.js"));
        }
        if page.query("main").ok().flatten().is_none() {
            bad.push(format!("{path}: no <main>"));
        }
        if page.query("h1").ok().flatten().is_none() {
            bad.push(format!("{path}: no h1"));
        }
        let nodes = page.ax_nodes();
        for n in &nodes {
            let control = matches!(
                n.role.as_str(),
                "textbox"
                    | "searchbox"
                    | "combobox"
                    | "checkbox"
                    | "radio"
                    | "spinbutton"
                    | "button"
                    | "link"
                    | "menuitem"
            );
            if control && n.name.is_empty() {
                bad.push(format!("{path}: a {} without an accessible name", n.role));
            }
        }
        if nodes.iter().any(|n| n.role == "table") && !nodes.iter().any(|n| n.role == "columnheader") {
            bad.push(format!("{path}: a table without column headers"));
        }
    }
    bad
}

/// The admin pages a user reaches from the menu, with the ids of seeded records.
fn magento_pages(version: Version) -> Vec<String> {
    let mut p: Vec<String> = [
        "/admin/admin/dashboard/",
        "/admin/catalog/product/",
        "/admin/catalog/product/?search=bag&page=2",
        "/admin/catalog/product/edit/id/5/",
        "/admin/catalog/product/new/set/4/type/simple/",
        "/admin/catalog/category/edit/id/13/",
        "/admin/sales/order/",
        "/admin/sales/order/view/order_id/12/",
        "/admin/sales/invoice/",
        "/admin/customer/index/",
        "/admin/customer/index/edit/id/3/",
        "/admin/customer/index/edit/id/3/?tab=account",
        "/admin/customer/index/edit/id/3/?tab=orders",
        "/admin/review/product/",
        "/admin/review/product/pending/",
        "/admin/review/product/edit/id/4/",
        "/admin/cms/page/",
        "/admin/cms/page/edit/page_id/2/",
        "/admin/cms/page/new/",
        "/admin/reports/report_sales/sales/",
        "/admin/reports/report_product/lowstock/",
        "/admin/system_design_theme/",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    for s in skillshift_sites::magento::ui::menu(version) {
        for (_, items) in s.groups {
            p.extend(items.iter().map(|i| i.path.to_string()));
        }
    }
    p
}

/// The admin screens and public pages, with the ids of seeded records.
fn wordpress_pages(v: Version) -> Vec<String> {
    let mut p: Vec<String> = [
        "/wp-admin/",
        "/wp-admin/edit.php",
        "/wp-admin/edit.php?s=Notes&paged=1",
        "/wp-admin/edit.php?post_status=trash",
        "/wp-admin/edit.php?post_type=page",
        "/wp-admin/edit.php?inline=12",
        "/wp-admin/post.php?post=12&action=edit",
        "/wp-admin/post-new.php",
        "/wp-admin/post-new.php?post_type=page",
        "/wp-admin/edit-comments.php",
        "/wp-admin/edit-comments.php?comment_status=moderated",
        "/wp-admin/comment.php?action=editcomment&c=3",
        "/wp-admin/edit-tags.php?taxonomy=category",
        "/wp-admin/edit-tags.php?taxonomy=post_tag",
        "/wp-admin/term.php?taxonomy=category&tag_ID=2",
        "/wp-admin/users.php",
        "/wp-admin/user-edit.php?user_id=5",
        "/wp-admin/user-new.php",
        "/wp-admin/profile.php",
        "/wp-admin/options-general.php",
        "/wp-admin/options-reading.php",
        "/wp-admin/options-discussion.php",
        "/",
        "/?s=garden",
        "/category/food/",
        "/tag/howto/",
        "/?p=12",
        "/about/",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    for (_, _, href, subs) in skillshift_sites::wordpress::ui::menu(v) {
        p.push(format!("/wp-admin/{href}"));
        p.extend(subs.iter().map(|(_, h)| format!("/wp-admin/{h}")));
    }
    if v == Version::V2 {
        p.push("/wp-admin/site-editor.php?path=/navigation".into());
    }
    p
}

#[tokio::test]
async fn every_magento_admin_page_has_landmarks_headings_and_named_controls() {
    for v in [Version::V1, Version::V2] {
        let bad = lint(Site::Magento, v, &magento_pages(v)).await;
        assert!(bad.is_empty(), "{v}:\n{}", bad.join("\n"));
    }
}

#[tokio::test]
async fn every_wordpress_screen_has_landmarks_headings_and_named_controls() {
    for v in [Version::V1, Version::V2] {
        let bad = lint(Site::Wordpress, v, &wordpress_pages(v)).await;
        assert!(bad.is_empty(), "{v}:\n{}", bad.join("\n"));
    }
}
