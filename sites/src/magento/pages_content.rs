//! Content, marketing and report pages of the Magento admin: product reviews
//! (all and pending, the review form), CMS pages (grid and form, with the
//! v1 WYSIWYG or v2 Page Builder content editor, M2), the reports, v2's
//! Templates (M5) and Media Gallery (M10) grids, and the storefront pages
//! that show CMS pages, products and the "Login as Customer" landing page.

use std::collections::BTreeMap;

use super::data::{money, CmsPage, Review, Store, REVIEW_STATUSES};
use super::pages_catalog::description_editor;
use super::ui::{self, checkbox, grid, pager, search_form, select, text_input};
use super::{err, ok, Ctx, Out};
use crate::kit::paging::paginate;
use crate::kit::text::{esc, slug};
use crate::kit::web::{Req, Resp};

const PER_PAGE: usize = 20;

pub fn route(ctx: &mut Ctx, req: &Req, path: &str, parts: &[&str], id: Option<u32>) -> Out {
    match parts {
        ["review", "product"] => review_grid(ctx, req, false).into(),
        ["review", "product", "pending"] => review_grid(ctx, req, true).into(),
        ["review", "product", "edit", ..] => {
            match id.and_then(|id| ctx.store.reviews.iter().find(|r| r.id == id).cloned()) {
                Some(r) => review_form(ctx, &r).into(),
                None => err("/admin/review/product/", "The review was removed by another user or does not exist."),
            }
        }
        ["review", "product", "save", ..] if req.post => save_review(ctx, req, id),
        ["cms", "page"] => page_grid(ctx, req).into(),
        ["cms", "page", "edit", ..] => match id.and_then(|id| ctx.store.pages.iter().find(|p| p.id == id).cloned()) {
            Some(p) => page_form(ctx, Some(&p)).into(),
            None => err("/admin/cms/page/", "This page no longer exists."),
        },
        ["cms", "page", "new"] => page_form(ctx, None).into(),
        ["cms", "page", "save", ..] if req.post => save_page(ctx, req, id),
        ["reports", ..] => report(ctx, path),
        ["pagebuilder", "template"] if ctx.v2() => templates(ctx).into(),
        ["media_gallery", "media", "index"] if ctx.v2() => media_gallery(ctx).into(),
        _ => super::generic(ctx, path),
    }
}

fn review_grid(ctx: &Ctx, req: &Req, pending: bool) -> Resp {
    let kw = req.q("search").unwrap_or("");
    let found = ctx.store.search_reviews(kw, pending);
    let (rows, pages) = paginate(&found, req.page(), PER_PAGE);
    let rows: Vec<(String, Vec<String>)> = rows
        .iter()
        .map(|r| {
            let product = ctx.store.product(r.product).map(|p| p.name.clone()).unwrap_or_default();
            (
                format!("review-{}", r.id),
                vec![
                    r.id.to_string(),
                    r.created.clone(),
                    r.status.clone(),
                    esc(&r.title),
                    esc(&r.nickname),
                    esc(&product),
                    format!("<a href=\"/admin/review/product/edit/id/{}/\">Edit</a>", r.id),
                ],
            )
        })
        .collect();
    let cols = [
        ("id", "ID"),
        ("created", "Created"),
        ("status", "Status"),
        ("title", "Title"),
        ("nickname", "Nickname"),
        ("product", "Product"),
        ("actions", "Action"),
    ];
    let (title, base) = if pending {
        ("Pending Reviews", "/admin/review/product/pending/")
    } else {
        ("Reviews", "/admin/review/product/")
    };
    let body = format!(
        "{}{}{}",
        search_form(base, kw),
        pager(base, kw, req.page().min(pages), pages, found.len()),
        grid(title, &cols, &rows, 3)
    );
    ctx.page(title, "<a class=\"action-primary\" href=\"/admin/review/product/new/\">New Review</a>", &body)
}

fn review_form(ctx: &Ctx, r: &Review) -> Resp {
    let product = ctx.store.product(r.product).map(|p| p.name.clone()).unwrap_or_default();
    let body = format!(
        "<form method=\"post\" action=\"/admin/review/product/save/id/{id}/\" aria-label=\"Review\">\
         <div class=\"page-actions\"><a href=\"/admin/review/product/\">Back</a> <button type=\"submit\" class=\"primary\">Save Review</button></div>\
         <fieldset><legend>Review Details</legend>{dl}{status}{nick}{title}\
         <div class=\"admin__field\"><label for=\"review-detail\">Review</label><textarea id=\"review-detail\" name=\"detail\" rows=\"4\">{detail}</textarea></div>\
         </fieldset></form>",
        id = r.id,
        dl = ui::dl(&[("Product", esc(&product)), ("Author", "Customer".into()), ("Product Rating", format!("{} star(s)", r.rating))]),
        status = select("review-status", "status", "Status", &["Approved", "Pending", "Not Approved"], &r.status),
        nick = text_input("review-nickname", "nickname", "Nickname", &r.nickname),
        title = text_input("review-title", "title", "Summary of Review", &r.title),
        detail = esc(&r.detail),
    );
    ctx.page("Edit Review", "", &body)
}

fn save_review(ctx: &mut Ctx, req: &Req, id: Option<u32>) -> Out {
    let Some(r) = id.and_then(|id| ctx.store.reviews.iter_mut().find(|r| r.id == id)) else {
        return err("/admin/review/product/", "The review was removed by another user or does not exist.");
    };
    let back = format!("/admin/review/product/edit/id/{}/", r.id);
    let Some(status) = req.f("status").filter(|s| REVIEW_STATUSES.contains(s)) else {
        return err(back, "Please select a valid status.");
    };
    let (nick, title) = (req.f("nickname").unwrap_or("").trim(), req.f("title").unwrap_or("").trim());
    if nick.is_empty() || title.is_empty() {
        return err(back, "\"Nickname\" and \"Summary of Review\" are required.");
    }
    r.status = status.to_string();
    r.nickname = nick.to_string();
    r.title = title.to_string();
    if let Some(d) = req.f("detail") {
        r.detail = d.to_string();
    }
    ok("/admin/review/product/", "You saved the review.")
}

fn page_grid(ctx: &Ctx, req: &Req) -> Resp {
    let kw = req.q("search").unwrap_or("");
    let found = ctx.store.search_pages(kw);
    let (rows, pages) = paginate(&found, req.page(), PER_PAGE);
    let rows: Vec<(String, Vec<String>)> = rows
        .iter()
        .map(|p| {
            (
                format!("page-{}", p.id),
                vec![
                    p.id.to_string(),
                    esc(&p.title),
                    esc(&p.identifier),
                    "1 column".into(),
                    if p.active { "Enabled" } else { "Disabled" }.into(),
                    p.modified.clone(),
                    format!(
                        "<a href=\"/admin/cms/page/edit/page_id/{}/\">Edit</a> <a href=\"/{}\">View</a>",
                        p.id, p.identifier
                    ),
                ],
            )
        })
        .collect();
    let cols = [
        ("id", "ID"),
        ("title", "Title"),
        ("url-key", "URL Key"),
        ("layout", "Layout"),
        ("status", "Status"),
        ("modified", "Modified"),
        ("actions", "Action"),
    ];
    let body = format!(
        "{}{}{}",
        search_form("/admin/cms/page/", kw),
        pager("/admin/cms/page/", kw, req.page().min(pages), pages, found.len()),
        grid("Pages", &cols, &rows, 1)
    );
    ctx.page("Pages", "<a class=\"action-primary\" href=\"/admin/cms/page/new/\">Add New Page</a>", &body)
}

fn page_form(ctx: &Ctx, p: Option<&CmsPage>) -> Resp {
    let action = match p {
        Some(p) => format!("/admin/cms/page/save/page_id/{}/", p.id),
        None => "/admin/cms/page/save/".into(),
    };
    let content = p.map(|p| p.content.as_str()).unwrap_or("");
    let body = format!(
        "<form method=\"post\" action=\"{action}\" aria-label=\"Page\">\
         <div class=\"page-actions\"><a href=\"/admin/cms/page/\">Back</a> <button type=\"submit\" class=\"primary\">Save</button></div>\
         <fieldset><legend>Page Information</legend>{}{}</fieldset>\
         <section><h2><button type=\"button\" aria-expanded=\"false\" aria-controls=\"cms-content-section\">Content</button></h2>\
         <div id=\"cms-content-section\" hidden>{}{}</div></section>\
         <section><h2><button type=\"button\" aria-expanded=\"false\" aria-controls=\"cms-seo\">Search Engine Optimization</button></h2>\
         <div id=\"cms-seo\" hidden>{}</div></section></form>",
        checkbox("cms-active", "is_active", "Enable Page", p.is_none_or(|p| p.active)),
        text_input("cms-title", "title", "Page Title", p.map(|p| p.title.as_str()).unwrap_or("")),
        text_input("cms-heading", "content_heading", "Content Heading", ""),
        description_editor(ctx.version, "cms-content", "content", "Content", content),
        text_input("cms-identifier", "identifier", "URL Key", p.map(|p| p.identifier.as_str()).unwrap_or("")),
    );
    ctx.page(p.map(|p| p.title.as_str()).unwrap_or("New Page"), "", &body)
}

fn save_page(ctx: &mut Ctx, req: &Req, id: Option<u32>) -> Out {
    let title = req.f("title").unwrap_or("").trim().to_string();
    let back =
        id.map(|id| format!("/admin/cms/page/edit/page_id/{id}/")).unwrap_or_else(|| "/admin/cms/page/new/".into());
    if title.is_empty() {
        return err(back, "The \"Page Title\" is required.");
    }
    let identifier = req.f("identifier").map(slug).filter(|s| !s.is_empty()).unwrap_or_else(|| slug(&title));
    let s = &mut *ctx.store;
    if s.pages.iter().any(|p| p.identifier == identifier && Some(p.id) != id) {
        return err(back, "A page URL key for specified store already exists.");
    }
    let id = match id {
        Some(id) => id,
        None => {
            let id = s.pages.iter().map(|p| p.id).max().unwrap_or(0) + 1;
            s.pages.push(CmsPage {
                id,
                title: title.clone(),
                identifier: identifier.clone(),
                active: true,
                content: String::new(),
                modified: "2026-11-29".into(),
            });
            id
        }
    };
    let Some(p) = s.pages.iter_mut().find(|p| p.id == id) else {
        return err("/admin/cms/page/", "This page no longer exists.");
    };
    p.title = title;
    p.identifier = identifier;
    p.active = req.f("is_active") == Some("1");
    if let Some(c) = req.f("content") {
        p.content = c.to_string();
    }
    p.modified = "2026-11-29".into();
    ok(format!("/admin/cms/page/edit/page_id/{id}/"), "You saved the page.")
}

/// A report's title, columns (id, label) and rows of cells.
type Report<'a> = (&'a str, Vec<(&'a str, &'a str)>, Vec<Vec<String>>);

/// The reports this fixture computes; other report menu items are empty grids.
fn report(ctx: &Ctx, path: &str) -> Out {
    let s = &*ctx.store;
    let live = || s.orders.iter().filter(|o| o.status != "Canceled");
    let (title, cols, rows): Report = match path {
        "/admin/reports/report_sales/sales" => {
            let mut by: BTreeMap<String, (usize, u32, u64)> = BTreeMap::new();
            for o in live() {
                let e = by.entry(o.date[..7].to_string()).or_default();
                e.0 += 1;
                e.1 += o.items.iter().map(|i| i.qty).sum::<u32>();
                e.2 += o.grand_total();
            }
            let rows = by.into_iter().map(|(m, (n, q, t))| vec![m, n.to_string(), q.to_string(), money(t)]).collect();
            (
                "Orders Report",
                vec![
                    ("interval", "Interval"),
                    ("orders", "Orders"),
                    ("items", "Sales Items"),
                    ("total", "Sales Total"),
                ],
                rows,
            )
        }
        "/admin/reports/report_sales/bestsellers" | "/admin/reports/report_product/sold" => {
            let mut by: BTreeMap<u32, u32> = BTreeMap::new();
            for o in live() {
                for i in &o.items {
                    *by.entry(i.product).or_default() += i.qty;
                }
            }
            let mut v: Vec<(u32, u32)> = by.into_iter().collect();
            v.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
            let rows = v
                .iter()
                .take(20)
                .filter_map(|(id, q)| s.product(*id).map(|p| vec![esc(&p.name), money(p.price_cents), q.to_string()]))
                .collect();
            let title = if path.ends_with("bestsellers") { "Bestsellers Report" } else { "Ordered Products Report" };
            (title, vec![("product", "Product"), ("price", "Price"), ("qty", "Order Quantity")], rows)
        }
        "/admin/reports/report_product/lowstock" => {
            let rows = s
                .products
                .iter()
                .filter(|p| p.qty < 10)
                .map(|p| vec![esc(&p.name), esc(&p.sku), p.qty.to_string()])
                .collect();
            ("Low Stock Report", vec![("product", "Product"), ("sku", "SKU"), ("qty", "Quantity")], rows)
        }
        "/admin/reports/report_customer/accounts" => {
            let mut by: BTreeMap<String, usize> = BTreeMap::new();
            for c in &s.customers {
                *by.entry(c.created[..7].to_string()).or_default() += 1;
            }
            (
                "New Accounts Report",
                vec![("interval", "Interval"), ("accounts", "New Accounts")],
                by.into_iter().map(|(m, n)| vec![m, n.to_string()]).collect(),
            )
        }
        "/admin/reports/report_review/customer" | "/admin/reports/report_review/product" => {
            let by_customer = path.ends_with("customer");
            let mut by: BTreeMap<String, usize> = BTreeMap::new();
            for r in &s.reviews {
                let key = if by_customer {
                    r.nickname.clone()
                } else {
                    s.product(r.product).map(|p| p.name.clone()).unwrap_or_default()
                };
                *by.entry(key).or_default() += 1;
            }
            let (title, first) = if by_customer {
                ("Customer Reviews Report", ("customer", "Customer"))
            } else {
                ("Product Reviews Report", ("product", "Product"))
            };
            (
                title,
                vec![first, ("reviews", "Reviews")],
                by.into_iter().map(|(k, n)| vec![esc(&k), n.to_string()]).collect(),
            )
        }
        _ => return super::generic(ctx, path),
    };
    let rows: Vec<(String, Vec<String>)> = rows.into_iter().enumerate().map(|(i, r)| (format!("r{i}"), r)).collect();
    let body = format!("{}{}", pager(&format!("{path}/"), "", 1, 1, rows.len()), grid(title, &cols, &rows, 0));
    ctx.page(title, "", &body).into()
}

fn templates(ctx: &Ctx) -> Resp {
    let rows: Vec<(String, Vec<String>)> =
        [("Promo Banner Row", "Any"), ("Two Column Story", "Page"), ("Footer Links", "Block")]
            .iter()
            .enumerate()
            .map(|(i, (n, f))| {
                (
                    format!("tpl-{i}"),
                    vec![
                        (i + 1).to_string(),
                        n.to_string(),
                        f.to_string(),
                        "2026-10-0".to_string() + &(i + 1).to_string(),
                    ],
                )
            })
            .collect();
    let body = grid(
        "Templates",
        &[("id", "ID"), ("name", "Template Name"), ("for", "Created For"), ("created", "Created")],
        &rows,
        1,
    );
    ctx.page("Templates", "", &body)
}

fn media_gallery(ctx: &Ctx) -> Resp {
    let rows: Vec<(String, Vec<String>)> = ctx
        .store
        .products
        .iter()
        .take(24)
        .map(|p| {
            (
                format!("media-{}", p.id),
                vec![format!("{}.jpg", p.url_key), "catalog/product".into(), "image/jpeg".into()],
            )
        })
        .collect();
    let body = format!(
        "{}<p><button type=\"button\">Upload Image</button> <button type=\"button\">Search Adobe Stock</button></p>{}",
        search_form("/admin/media_gallery/media/index/", ""),
        grid("Media Gallery", &[("file", "File"), ("dir", "Directory"), ("type", "Type")], &rows, 0)
    );
    ctx.page("Media Gallery", "", &body)
}

/// The storefront: CMS pages by URL key, product pages, the account landing page.
pub fn storefront(s: &Store, path: &str) -> Resp {
    let shell = |title: &str, main: String| {
        Resp::Page(ui::bare(
            &format!("{title} - Luma"),
            &format!(
                "<header class=\"page-header\"><a href=\"/\">Luma</a><nav aria-label=\"Categories\"><ul><li><a href=\"/what-is-new\">What's New</a></li>\
                 <li><a href=\"/gear\">Gear</a></li></ul></nav></header><main id=\"maincontent\">{main}</main>\
                 <footer><p>Copyright © 2013-present Magento, Inc. All rights reserved.</p></footer>"
            ),
        ))
    };
    let parts: Vec<&str> = path.trim_start_matches('/').split('/').collect();
    if let ["catalog", "product", "view", "id", id] = parts.as_slice() {
        if let Some(p) = id.parse().ok().and_then(|id| s.product(id)).filter(|p| p.enabled) {
            return shell(
                &p.name,
                format!(
                    "<h1>{}</h1><p class=\"price\">{}</p><p>SKU: {}</p><section aria-labelledby=\"desc-h\"><h2 id=\"desc-h\">Details</h2>\
                     <div id=\"description\">{}</div></section>",
                    esc(&p.name),
                    money(p.price_cents),
                    esc(&p.sku),
                    p.description
                ),
            );
        }
    }
    if let ["customer", "account", "index", "id", id] = parts.as_slice() {
        if let Some(c) = id.parse().ok().and_then(|id| s.customer(id)) {
            return shell(
                "My Account",
                format!("<h1>My Account</h1><p role=\"status\">Welcome, {}!</p>", esc(&c.name())),
            );
        }
    }
    let key = if path == "/" { "home" } else { path.trim_start_matches('/') };
    match s.pages.iter().find(|p| p.identifier == key && p.active) {
        Some(p) => shell(&p.title, format!("<h1>{}</h1><div class=\"cms-content\">{}</div>", esc(&p.title), p.content)),
        None => Resp::NotFound(ui::bare(
            "404 Not Found",
            "<main><h1>Whoops, our bad...</h1><p>The page you requested was not found.</p></main>",
        )),
    }
}
