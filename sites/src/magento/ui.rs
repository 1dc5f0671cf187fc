//! The Magento admin's page chrome: the document shell, the header with the
//! account menu, the top-level menu (Sales, Catalog, Customers, Marketing,
//! Content, Reports, Stores, System; flyouts are disclosure buttons), flash
//! messages, and the grid, pager and definition-list helpers every page uses.

use skillshift_common::Version;

use crate::kit::layout::document;
use crate::kit::state::Flash;
use crate::kit::text::{esc, slug};
use crate::kit::url::encode_query;

/// One menu link: label and admin path.
pub struct Item {
    pub label: &'static str,
    pub path: &'static str,
}

/// A top-level menu section: its groups of links.
pub struct Section {
    pub id: &'static str,
    pub label: &'static str,
    pub groups: Vec<(&'static str, Vec<Item>)>,
}

const fn it(label: &'static str, path: &'static str) -> Item {
    Item { label, path }
}

/// The admin menu of `version` (v2 adds M5, M8 and M10).
pub fn menu(version: Version) -> Vec<Section> {
    let v2 = version == Version::V2;
    let mut customers = vec![
        it("All Customers", "/admin/customer/index/"),
        it("Now Online", "/admin/customer/online/"),
        it("Customer Groups", "/admin/customer/group/"),
        it("Segments", "/admin/customer/segment/"),
    ];
    let mut elements = vec![
        it("Pages", "/admin/cms/page/"),
        it("Blocks", "/admin/cms/block/"),
        it("Widgets", "/admin/admin/widget_instance/"),
    ];
    let mut content = Vec::new();
    if v2 {
        customers.insert(2, it("Login as Customer Log", "/admin/loginascustomer_log/log/index/"));
        elements.push(it("Templates", "/admin/pagebuilder/template/"));
    }
    content.push(("Elements", elements));
    content.push((
        "Design",
        vec![
            it("Configuration", "/admin/theme/design_config/"),
            it("Themes", "/admin/system_design_theme/"),
            it("Schedule", "/admin/system_design/"),
        ],
    ));
    if v2 {
        content.push(("Media", vec![it("Media Gallery", "/admin/media_gallery/media/index/")]));
    }
    vec![
        Section {
            id: "sales",
            label: "Sales",
            groups: vec![(
                "Operations",
                vec![
                    it("Orders", "/admin/sales/order/"),
                    it("Invoices", "/admin/sales/invoice/"),
                    it("Shipments", "/admin/sales/shipment/"),
                    it("Credit Memos", "/admin/sales/creditmemo/"),
                    it("Transactions", "/admin/sales/transactions/"),
                ],
            )],
        },
        Section {
            id: "catalog",
            label: "Catalog",
            groups: vec![(
                "Inventory",
                vec![it("Products", "/admin/catalog/product/"), it("Categories", "/admin/catalog/category/")],
            )],
        },
        Section { id: "customer", label: "Customers", groups: vec![("", customers)] },
        Section {
            id: "marketing",
            label: "Marketing",
            groups: vec![
                (
                    "Promotions",
                    vec![
                        it("Catalog Price Rule", "/admin/catalog_rule/promo_catalog/"),
                        it("Cart Price Rules", "/admin/sales_rule/promo_quote/"),
                    ],
                ),
                ("Communications", vec![it("Newsletter Queue", "/admin/newsletter/queue/")]),
                (
                    "User Content",
                    vec![
                        it("All Reviews", "/admin/review/product/"),
                        it("Pending Reviews", "/admin/review/product/pending/"),
                    ],
                ),
            ],
        },
        Section { id: "content", label: "Content", groups: content },
        Section {
            id: "reports",
            label: "Reports",
            groups: vec![
                (
                    "Marketing",
                    vec![
                        it("Products in Cart", "/admin/reports/report_shopcart/product/"),
                        it("Search Terms", "/admin/search/term/report/"),
                    ],
                ),
                (
                    "Reviews",
                    vec![
                        it("By Customers", "/admin/reports/report_review/customer/"),
                        it("By Products", "/admin/reports/report_review/product/"),
                    ],
                ),
                (
                    "Sales",
                    vec![
                        it("Orders", "/admin/reports/report_sales/sales/"),
                        it("Tax", "/admin/reports/report_sales/tax/"),
                        it("Invoiced", "/admin/reports/report_sales/invoiced/"),
                        it("Refunds", "/admin/reports/report_sales/refunded/"),
                    ],
                ),
                (
                    "Customers",
                    vec![
                        it("Order Total", "/admin/reports/report_customer/totals/"),
                        it("New", "/admin/reports/report_customer/accounts/"),
                    ],
                ),
                (
                    "Products",
                    vec![
                        it("Bestsellers", "/admin/reports/report_sales/bestsellers/"),
                        it("Low Stock", "/admin/reports/report_product/lowstock/"),
                        it("Ordered", "/admin/reports/report_product/sold/"),
                    ],
                ),
            ],
        },
        Section {
            id: "stores",
            label: "Stores",
            groups: vec![
                (
                    "Settings",
                    vec![
                        it("All Stores", "/admin/admin/system_store/"),
                        it("Configuration", "/admin/admin/system_config/"),
                    ],
                ),
                ("Currency", vec![it("Currency Rates", "/admin/admin/system_currency/")]),
            ],
        },
        Section {
            id: "system",
            label: "System",
            groups: vec![
                (
                    "Tools",
                    vec![
                        it("Cache Management", "/admin/admin/cache/"),
                        it("Index Management", "/admin/indexer/indexer/list/"),
                    ],
                ),
                (
                    "Permissions",
                    vec![it("All Users", "/admin/admin/user/"), it("User Roles", "/admin/admin/user_role/")],
                ),
            ],
        },
    ]
}

/// The label of a menu item at `path`, if the menu has one.
pub fn menu_label(version: Version, path: &str) -> Option<&'static str> {
    menu(version)
        .into_iter()
        .flat_map(|s| s.groups)
        .flat_map(|(_, items)| items)
        .find(|i| i.path == path)
        .map(|i| i.label)
}

/// A complete admin page: shell, header, menu, flash and `body` inside `<main>`.
pub fn page(version: Version, title: &str, flash: Option<&Flash>, actions: &str, body: &str) -> String {
    let mut nav = String::from(
        "<nav class=\"admin__menu\" aria-label=\"Main menu\"><ul>\
         <li><a href=\"/admin/admin/dashboard/\">Dashboard</a></li>",
    );
    for s in menu(version) {
        nav.push_str(&format!(
            "<li><button type=\"button\" aria-expanded=\"false\" aria-controls=\"menu-{id}\">{label}</button>\
             <div class=\"submenu\" id=\"menu-{id}\" hidden><strong class=\"submenu-title\">{label}</strong>",
            id = s.id,
            label = s.label
        ));
        for (group, items) in &s.groups {
            if !group.is_empty() {
                nav.push_str(&format!("<strong class=\"submenu-group-title\">{group}</strong>"));
            }
            nav.push_str("<ul>");
            for i in items {
                nav.push_str(&format!("<li><a href=\"{}\">{}</a></li>", i.path, i.label));
            }
            nav.push_str("</ul>");
        }
        nav.push_str("</div></li>");
    }
    nav.push_str("</ul></nav>");
    let flash = flash.map(flash_html).unwrap_or_default();
    let actions =
        if actions.is_empty() { String::new() } else { format!("<div class=\"page-actions\">{actions}</div>") };
    let body = format!(
        "<div class=\"layout\">{nav}<div class=\"page-wrapper\"><header class=\"page-header\">\
         <h1 class=\"page-title\">{t}</h1><div class=\"admin-user\">\
         <button type=\"button\" aria-haspopup=\"menu\" aria-expanded=\"false\" aria-controls=\"account-menu\">admin</button>\
         <ul role=\"menu\" id=\"account-menu\" hidden><li><a role=\"menuitem\" href=\"/admin/admin/system_account/\">Account Setting</a></li>\
         <li><a role=\"menuitem\" href=\"/\">Customer View</a></li>\
         <li><a role=\"menuitem\" href=\"/admin/admin/auth/logout/\">Sign Out</a></li></ul></div></header>\
         <main id=\"anchor-content\">{flash}{actions}{body}</main>\
         <footer class=\"page-footer\"><p>Copyright © 2026 Magento Commerce Inc. All rights reserved. Magento ver. {ver}</p></footer>\
         </div></div>",
        t = esc(title),
        ver = if version == Version::V2 { "2.4.6" } else { "2.4.2" },
    );
    let class = if version == Version::V2 { "adminhtml v2" } else { "adminhtml v1" };
    document("lang=\"en\"", &format!("{title} / Magento Admin"), &[CSS], class, &body)
}

/// A bare page (login, two-factor step, storefront) without the admin chrome.
pub fn bare(title: &str, body: &str) -> String {
    document("lang=\"en\"", title, &[CSS], "bare", body)
}

pub fn flash_html(f: &Flash) -> String {
    let (role, class) = if f.error { ("alert", "message-error") } else { ("status", "message-success") };
    format!("<div class=\"messages\"><div role=\"{role}\" class=\"message {class}\">{}</div></div>", esc(&f.text))
}

/// A keyword search form for a grid at `action`.
pub fn search_form(action: &str, value: &str) -> String {
    format!(
        "<form class=\"data-grid-search\" role=\"search\" aria-label=\"Grid search\" method=\"get\" action=\"{action}\">\
         <label for=\"fulltext\">Search by keyword</label>\
         <input type=\"search\" id=\"fulltext\" name=\"search\" value=\"{}\">\
         <button type=\"submit\">Search</button></form>",
        esc(value)
    )
}

/// The records-found count and pager of a grid at `base` (which may carry `?search=`).
pub fn pager(base: &str, search: &str, page: usize, pages: usize, total: usize) -> String {
    let q = |p: usize| {
        let mut u = format!("{base}?page={p}");
        if !search.is_empty() {
            u.push_str(&format!("&search={}", encode_query(search)));
        }
        u
    };
    let prev =
        if page > 1 { format!("<a href=\"{}\" rel=\"prev\">Previous Page</a>", q(page - 1)) } else { String::new() };
    let next =
        if page < pages { format!("<a href=\"{}\" rel=\"next\">Next Page</a>", q(page + 1)) } else { String::new() };
    format!(
        "<div class=\"grid-toolbar\"><p><output id=\"records-found\" aria-label=\"records found\">{total}</output> records found</p>\
         <nav aria-label=\"Pagination\">{prev} <span>Page {page} of {pages}</span> {next}</nav></div>"
    )
}

/// A data grid: `cols` are (id, label); each row is (row id, cells). The cell
/// at `hdr` is the row's header; the others (but `actions`) are labelled
/// "<column> <row header>" through `aria-labelledby`, as ARIA grids do.
pub fn grid(caption: &str, cols: &[(&str, &str)], rows: &[(String, Vec<String>)], hdr: usize) -> String {
    let mut h = format!("<table class=\"data-grid\"><caption>{}</caption><thead><tr>", esc(caption));
    for (id, label) in cols {
        h.push_str(&format!("<th scope=\"col\" id=\"col-{id}\">{label}</th>"));
    }
    h.push_str("</tr></thead><tbody>");
    if rows.is_empty() {
        h.push_str(&format!("<tr><td colspan=\"{}\">We couldn't find any records.</td></tr>", cols.len()));
    }
    for (rid, cells) in rows {
        h.push_str("<tr>");
        for (i, (cell, (cid, _))) in cells.iter().zip(cols).enumerate() {
            if i == hdr {
                h.push_str(&format!("<th scope=\"row\" id=\"{rid}\">{cell}</th>"));
            } else if *cid == "actions" {
                h.push_str(&format!("<td>{cell}</td>"));
            } else {
                h.push_str(&format!("<td aria-labelledby=\"col-{cid} {rid}\">{cell}</td>"));
            }
        }
        h.push_str("</tr>");
    }
    h.push_str("</tbody></table>");
    h
}

/// A definition list whose values are named by their terms: the `<dd>` of
/// term "Order Status" has id `order-status` and the accessible name "Order Status".
pub fn dl(items: &[(&str, String)]) -> String {
    let mut h = String::from("<dl class=\"admin__table-secondary\">");
    for (term, value) in items {
        let id = slug(term);
        h.push_str(&format!("<dt id=\"dt-{id}\">{term}</dt><dd id=\"{id}\" aria-labelledby=\"dt-{id}\">{value}</dd>"));
    }
    h.push_str("</dl>");
    h
}

/// A labelled text input.
pub fn text_input(id: &str, name: &str, label: &str, value: &str) -> String {
    format!(
        "<div class=\"admin__field\"><label for=\"{id}\">{label}</label><input type=\"text\" id=\"{id}\" name=\"{name}\" value=\"{}\"></div>",
        esc(value)
    )
}

/// A labelled `<select>` with `options` (value = label), `selected` chosen.
pub fn select(id: &str, name: &str, label: &str, options: &[&str], selected: &str) -> String {
    let mut h =
        format!("<div class=\"admin__field\"><label for=\"{id}\">{label}</label><select id=\"{id}\" name=\"{name}\">");
    for o in options {
        let sel = if *o == selected { " selected" } else { "" };
        h.push_str(&format!("<option value=\"{o}\"{sel}>{o}</option>", o = esc(o)));
    }
    h.push_str("</select></div>");
    h
}

/// A labelled checkbox.
pub fn checkbox(id: &str, name: &str, label: &str, checked: bool) -> String {
    format!(
        "<div class=\"admin__field\"><input type=\"checkbox\" id=\"{id}\" name=\"{name}\" value=\"1\"{}><label for=\"{id}\">{label}</label></div>",
        if checked { " checked" } else { "" }
    )
}

const CSS: &str = "body{margin:0;font:14px/1.4 'Open Sans',Helvetica,Arial,sans-serif;color:#303030;background:#f5f5f5}\
.layout{display:flex;min-height:100vh}.admin__menu{background:#373330;width:170px;flex:none}\
.admin__menu>ul{list-style:none;margin:0;padding:0}.admin__menu>ul>li>a,.admin__menu>ul>li>button{display:block;width:100%;\
padding:14px 10px;color:#aaa6a0;background:none;border:0;border-bottom:1px solid #514943;text-align:center;font:600 12px sans-serif;\
text-transform:uppercase;cursor:pointer}.admin__menu>ul>li>a{box-sizing:border-box;text-decoration:none;color:#f7f3eb}\
.submenu{position:absolute;left:170px;top:0;min-height:100%;width:260px;background:#4a4542;padding:20px;z-index:10;box-sizing:border-box}\
.submenu[hidden]{display:none}.submenu a{color:#fcfcfc;text-decoration:none;display:block;padding:4px 0}\
.submenu ul{list-style:none;padding:0;margin:0 0 14px}.submenu-title{display:block;color:#fff;font-size:22px;margin-bottom:16px}\
.submenu-group-title{display:block;color:#a79d95;font-size:13px;margin-bottom:6px}\
.page-wrapper{flex:1;min-width:0}.page-header{display:flex;justify-content:space-between;align-items:center;padding:20px 30px}\
.page-title{font-size:28px;font-weight:300;margin:0}.admin-user{position:relative}.admin-user ul{position:absolute;right:0;\
background:#fff;border:1px solid #adadad;list-style:none;padding:6px 0;margin:0;min-width:160px}.admin-user li a{display:block;padding:4px 12px}\
main{padding:0 30px 30px}.page-actions{background:#fff;padding:14px;margin-bottom:20px;text-align:right}\
button,.action-primary{background:#e3e3e3;border:1px solid #adadad;padding:6px 14px;font:600 14px sans-serif;color:#514943;cursor:pointer}\
.action-primary,button.primary{background:#eb5202;border-color:#eb5202;color:#fff}\
.messages .message{padding:14px 20px;margin-bottom:16px;background:#e5efe5;color:#185b00;border-left:4px solid #79a22e}\
.messages .message-error{background:#fae5e5;color:#6f3f3f;border-color:#e22626}\
.data-grid{width:100%;border-collapse:collapse;background:#fff}.data-grid caption{text-align:left;font-weight:600;padding:6px 0}\
.data-grid th[scope=col]{background:#514943;color:#fff;text-align:left;padding:8px;font-weight:600}\
.data-grid td,.data-grid th[scope=row]{padding:8px;border-bottom:1px solid #d6d6d6;text-align:left;font-weight:400}\
.grid-toolbar{display:flex;justify-content:space-between;margin:10px 0}.data-grid-search{margin:10px 0}\
.data-grid-search label{position:absolute;left:-9999px}.data-grid-search input{width:320px;padding:6px}\
.admin__field{margin:10px 0;display:flex;gap:12px;align-items:center}.admin__field label{width:200px;text-align:right;font-weight:600}\
.admin__field input[type=text],.admin__field select,.admin__field textarea{width:420px;padding:6px;border:1px solid #adadad}\
fieldset{background:#fff;border:1px solid #e3e3e3;margin:0 0 20px;padding:16px}legend{font-size:18px;font-weight:600}\
dl{display:grid;grid-template-columns:200px 1fr;gap:6px 16px;background:#fff;padding:16px}dt{font-weight:600}dd{margin:0}\
[role=dialog]{position:fixed;inset:60px 120px auto;background:#fff;border:1px solid #adadad;padding:24px;z-index:20;box-shadow:0 0 30px #0006}\
[role=dialog][hidden]{display:none}.pagebuilder-stage{inset:0}.bare{background:#373330}.login-box{background:#fff;width:380px;margin:100px auto;padding:30px}\
.tabs{list-style:none;padding:0;display:flex;gap:4px}.tabs a{display:block;padding:8px 14px;background:#fff;border:1px solid #ccc}\
.tabs a[aria-current=page]{border-bottom-color:#eb5202;font-weight:600}.dashboard-totals{display:flex;gap:40px;background:#fff;padding:16px;margin-bottom:16px}\
.page-footer{padding:20px 30px;color:#777}";
