//! The Magento task generator: 20 intent templates instantiated from the
//! seeded store into 114 tasks (46 string_match, 40 program_html, 28
//! url_match), with a reference solution per version. Each template's
//! solution is one function of (version, values); the example skill is the
//! same function at v1 with `{{param}}` placeholders, so skills and
//! solutions cannot drift apart.

use skillshift_common::skills::Step;
use skillshift_common::{Site, Version};

use super::data::{money, price_input, Store};
use crate::kit::tasks::{assemble, click, click_nth, fill, is_v2, read, select, tpl, Check, Inst, Template};
use crate::kit::text::slug;
use crate::GeneratedTask;

const START: &str = "__MAGENTO__/admin/admin/dashboard/";
const M: &str = "__MAGENTO__";

pub const TEMPLATES: &[Template] = &[
    tpl!(0, "magento_product_price", "What is the price of the product {{product}}?", ["product"]),
    tpl!(1, "magento_product_stock", "How many units of {{product}} are in stock?", ["product"]),
    tpl!(2, "magento_order_status", "What is the status of order #{{order}}?", ["order"]),
    tpl!(3, "magento_order_total", "What is the grand total of order #{{order}}?", ["order"]),
    tpl!(4, "magento_customer_email", "What is the email address of the customer {{customer}}?", ["customer"]),
    tpl!(5, "magento_customer_order_count", "How many orders has {{customer}} placed?", ["customer"]),
    tpl!(6, "magento_product_review_count", "How many reviews has the product {{product}} received?", ["product"]),
    tpl!(7, "magento_set_price", "Set the price of {{product}} to {{price}}", ["product", "price"]),
    tpl!(8, "magento_cancel_order", "Cancel order #{{order}}", ["order"]),
    tpl!(9, "magento_hold_order", "Put order #{{order}} on hold", ["order"]),
    tpl!(10, "magento_customer_group", "Move the customer {{customer}} to the {{group}} group", ["customer", "group"]),
    tpl!(
        11,
        "magento_create_cms_page",
        "Create a CMS page titled {{title}} whose content reads {{text}}",
        ["title", "text"]
    ),
    tpl!(12, "magento_product_description", "Set the description of {{product}} to {{text}}", ["product", "text"]),
    tpl!(13, "magento_approve_review", "Approve the pending review titled {{review}}", ["review"]),
    tpl!(
        14,
        "magento_cms_page_content",
        "Replace the content of the CMS page {{page}} with {{text}}",
        ["page", "text"]
    ),
    tpl!(15, "magento_open_product", "Open the edit page of the product {{product}}", ["product"]),
    tpl!(16, "magento_open_report", "Open the Reports > {{report}} page", ["report"]),
    tpl!(
        17,
        "magento_customer_orders_tab",
        "On the account page of the customer {{customer}}, show their orders",
        ["customer"]
    ),
    tpl!(18, "magento_open_cms_page", "Open the edit page of the CMS page {{page}}", ["page"]),
    tpl!(19, "magento_open_category", "Open the category {{category}} in the category tree", ["category"]),
];

fn nav(section: &str, item: &str) -> Vec<Step> {
    vec![click("button", section), click("link", item)]
}

fn search(kw: &str) -> Vec<Step> {
    vec![fill("searchbox", "Search by keyword", kw), click("button", "Search")]
}

fn cat(parts: Vec<Vec<Step>>) -> Vec<Step> {
    parts.into_iter().flatten().collect()
}

/// The form's "Content" section toggle: the second "Content" button, after the
/// admin menu's own "Content" section (a real name collision of the Magento admin).
fn content_section() -> Step {
    click_nth("button", "Content", 1)
}

/// The rich-text steps: v1 types into the WYSIWYG textarea named `label`;
/// v2 opens the Page Builder stage, adds a Text block and closes the stage.
fn rich_text(v: Version, label: &str, text: &str) -> Vec<Step> {
    if is_v2(v) {
        vec![
            click("button", "Edit with Page Builder"),
            click("button", "Text"),
            fill("textbox", "Text", text),
            click("button", "Close Full Screen"),
        ]
    } else {
        vec![fill("textbox", label, text)]
    }
}

/// The solution of template `t` in version `v` for `values` (placeholders for skills).
pub fn solution(t: u32, v: Version, x: &[String]) -> Vec<Step> {
    let a = x.first().map(String::as_str).unwrap_or("");
    let b = x.get(1).map(String::as_str).unwrap_or("");
    let products = || nav("Catalog", "Products");
    let orders = || nav("Sales", "Orders");
    let customers = || nav("Customers", "All Customers");
    let view_order = |o: &str| cat(vec![orders(), search(o), vec![click("link", "View")]]);
    match t {
        0 => cat(vec![products(), search(a), vec![read("cell", &format!("Price {a}"))]]),
        1 => cat(vec![products(), search(a), vec![read("cell", &format!("Quantity {a}"))]]),
        2 => cat(vec![view_order(a), vec![read("definition", "Order Status")]]),
        3 => cat(vec![view_order(a), vec![read("definition", "Grand Total")]]),
        4 => cat(vec![customers(), search(a), vec![read("cell", &format!("Email {a}"))]]),
        5 => cat(vec![orders(), search(a), vec![read("status", "records found")]]),
        6 => cat(vec![nav("Marketing", "All Reviews"), search(a), vec![read("status", "records found")]]),
        7 => cat(vec![
            products(),
            search(a),
            vec![click("link", "Edit"), fill("textbox", "Price", b), click("button", "Save")],
        ]),
        8 => cat(vec![view_order(a), vec![click("button", "Cancel"), click("button", "OK")]]),
        9 => cat(vec![view_order(a), vec![click("button", "Hold")]]),
        10 => cat(vec![
            customers(),
            search(a),
            vec![
                click("link", "Edit"),
                click("link", "Account Information"),
                select("Group", b),
                click("button", "Save Customer"),
            ],
        ]),
        11 => cat(vec![
            nav("Content", "Pages"),
            vec![click("link", "Add New Page"), fill("textbox", "Page Title", a), content_section()],
            rich_text(v, "Content", b),
            vec![click("button", "Save")],
        ]),
        12 => cat(vec![
            products(),
            search(a),
            vec![click("link", "Edit"), content_section()],
            rich_text(v, "Description", b),
            vec![click("button", "Save")],
        ]),
        13 => cat(vec![
            nav("Marketing", "Pending Reviews"),
            search(a),
            vec![click("link", "Edit"), select("Status", "Approved"), click("button", "Save Review")],
        ]),
        14 => cat(vec![
            nav("Content", "Pages"),
            search(a),
            vec![click("link", "Edit"), content_section()],
            rich_text(v, "Content", b),
            vec![click("button", "Save")],
        ]),
        15 => cat(vec![products(), search(a), vec![click("link", "Edit")]]),
        16 => nav("Reports", a),
        // Starts on the customer's page: one step.
        17 => vec![click("link", "Orders")],
        18 => cat(vec![nav("Content", "Pages"), search(a), vec![click("link", "Edit")]]),
        _ => cat(vec![nav("Catalog", "Categories"), vec![click("link", a)]]),
    }
}

const NEW_PAGES: &[(&str, &str)] = &[
    ("Holiday Gift Guide", "Find the perfect gift for every athlete on your list."),
    ("Winter Clearance", "Save up to 40 percent on last season's jackets."),
    ("Trail Running Tips", "Start slow and keep your cadence high on steep climbs."),
    ("Meet Our Designers", "Our design team tests every product on the trail."),
    ("Recycling Program", "Bring back worn gear and get 10 percent off your next order."),
];
const DESCRIPTIONS: &[&str] = &[
    "Water-resistant fabric with reinforced seams.",
    "Lightweight and packable for weekend trips.",
    "Made from 80 percent recycled polyester.",
    "Padded straps keep heavy loads comfortable.",
    "Machine washable and quick to dry.",
];
const PAGE_TEXTS: &[&str] = &[
    "Our store is closed on public holidays.",
    "Orders ship within two business days.",
    "Questions? Call us any weekday.",
];
const REPORTS: &[(&str, &str)] = &[
    ("Low Stock", "/admin/reports/report_product/lowstock/"),
    ("Bestsellers", "/admin/reports/report_sales/bestsellers/"),
    ("Orders", "/admin/reports/report_sales/sales/"),
    ("New", "/admin/reports/report_customer/accounts/"),
    ("By Customers", "/admin/reports/report_review/customer/"),
    ("By Products", "/admin/reports/report_review/product/"),
    ("Ordered", "/admin/reports/report_product/sold/"),
];

/// Up to `n` items of `items` passing `keep`, in steps of 37 from `from`.
fn spread<T>(items: &[T], n: usize, from: usize, keep: impl Fn(&T) -> bool) -> Vec<&T> {
    crate::kit::tasks::spread(items, n, from, 37, keep)
}

/// The instantiations of every template, for version `v`.
fn instances(v: Version) -> Vec<(&'static Template, Vec<Inst>)> {
    let s = Store::seed();
    let inst = |t: u32, values: Vec<String>, check: Check| Inst {
        solution: solution(t, v, &values),
        values,
        start: START.into(),
        check,
    };
    let one_product = |p: &&super::data::Product| s.search_products(&p.name).len() == 1;
    let one_customer = |c: &super::data::Customer| s.search_customers(&c.name()).len() == 1;
    let own_orders = |c: &super::data::Customer| {
        let found = s.search_orders(&c.name());
        !found.is_empty() && found.iter().all(|o| o.customer == c.id)
    };
    let order_url = |id: u32| format!("{M}/admin/sales/order/view/order_id/{id}/");
    let status_is = |o: &super::data::Order, st: &[&str]| st.contains(&o.status.as_str());
    let products: Vec<&super::data::Product> = s.products.iter().collect();
    let mut groups: Vec<Vec<Inst>> = Vec::new();
    // 0-1: price and stock from the product grid.
    groups.push(
        spread(&products, 7, 3, one_product)
            .iter()
            .map(|p| inst(0, vec![p.name.clone()], Check::Answer(money(p.price_cents))))
            .collect(),
    );
    groups.push(
        spread(&products, 6, 11, one_product)
            .iter()
            .map(|p| inst(1, vec![p.name.clone()], Check::Answer(p.qty.to_string())))
            .collect(),
    );
    // 2-3: order status and total from the order view.
    groups.push(
        spread(&s.orders, 7, 5, |_| true)
            .iter()
            .map(|o| inst(2, vec![o.increment.clone()], Check::Answer(o.status.clone())))
            .collect(),
    );
    groups.push(
        spread(&s.orders, 6, 17, |_| true)
            .iter()
            .map(|o| inst(3, vec![o.increment.clone()], Check::Answer(money(o.grand_total()))))
            .collect(),
    );
    // 4-5: customer email, order count.
    groups.push(
        spread(&s.customers, 7, 2, one_customer)
            .iter()
            .map(|c| inst(4, vec![c.name()], Check::Answer(c.email.clone())))
            .collect(),
    );
    groups.push(
        spread(&s.customers, 6, 9, |c| one_customer(c) && own_orders(c))
            .iter()
            .map(|c| inst(5, vec![c.name()], Check::Answer(s.search_orders(&c.name()).len().to_string())))
            .collect(),
    );
    // 6: review count of a product (only its own reviews match the search).
    groups.push(
        spread(&products, 7, 1, |p| {
            let found = s.search_reviews(&p.name, false);
            !found.is_empty() && found.iter().all(|r| r.product == p.id) && one_product(p)
        })
        .iter()
        .map(|p| inst(6, vec![p.name.clone()], Check::Answer(s.search_reviews(&p.name, false).len().to_string())))
        .collect(),
    );
    // 7: set a price.
    groups.push(
        spread(&products, 6, 23, one_product)
            .iter()
            .enumerate()
            .map(|(i, p)| {
                let price = price_input((p.price_cents / 100 + 7 + i as u64) * 100 + 99);
                let url = format!("{M}/admin/catalog/product/edit/id/{}/", p.id);
                let check = Check::Html {
                    url,
                    locator: "document.querySelector(\"#product-price\").value".into(),
                    text: price.clone(),
                    exact: true,
                };
                inst(7, vec![p.name.clone(), price], check)
            })
            .collect(),
    );
    // 8-9: cancel and hold open orders.
    let open = |o: &super::data::Order| status_is(o, &["Pending", "Processing"]);
    let status_check = |o: &super::data::Order, st: &str| Check::Html {
        url: order_url(o.id),
        locator: "document.querySelector(\"#order-status\").innerText".into(),
        text: st.into(),
        exact: true,
    };
    groups.push(
        spread(&s.orders, 6, 29, open)
            .iter()
            .map(|o| inst(8, vec![o.increment.clone()], status_check(o, "Canceled")))
            .collect(),
    );
    groups.push(
        spread(&s.orders, 5, 61, open)
            .iter()
            .map(|o| inst(9, vec![o.increment.clone()], status_check(o, "On Hold")))
            .collect(),
    );
    // 10: customer group.
    groups.push(
        spread(&s.customers, 6, 31, one_customer)
            .iter()
            .map(|c| {
                let g = super::data::GROUPS.iter().find(|g| **g != c.group).copied().unwrap_or("General");
                let check = Check::Html {
                    url: format!("{M}/admin/customer/index/edit/id/{}/", c.id),
                    locator: "document.querySelector(\"#customer-group\").innerText".into(),
                    text: g.into(),
                    exact: true,
                };
                inst(10, vec![c.name(), g.into()], check)
            })
            .collect(),
    );
    // 11: create a CMS page (checked on the storefront).
    groups.push(
        NEW_PAGES
            .iter()
            .map(|(title, text)| {
                let url = format!("{M}/{}", slug(title));
                let check = Check::Html {
                    url,
                    locator: "document.querySelector(\".cms-content\").innerText".into(),
                    text: (*text).into(),
                    exact: false,
                };
                inst(11, vec![(*title).into(), (*text).into()], check)
            })
            .collect(),
    );
    // 12: product description (checked on the storefront product page).
    groups.push(
        spread(&products, 5, 41, |p| one_product(p) && p.enabled)
            .iter()
            .zip(DESCRIPTIONS)
            .map(|(p, d)| {
                let url = format!("{M}/catalog/product/view/id/{}", p.id);
                let check = Check::Html {
                    url,
                    locator: "document.querySelector(\"#description\").innerText".into(),
                    text: (*d).into(),
                    exact: true,
                };
                inst(12, vec![p.name.clone(), (*d).into()], check)
            })
            .collect(),
    );
    // 13: approve a pending review.
    groups.push(
        spread(&s.reviews, 4, 7, |r| r.status == "Pending" && s.search_reviews(&r.title, true).len() == 1)
            .iter()
            .map(|r| {
                let check = Check::Html {
                    url: format!("{M}/admin/review/product/edit/id/{}/", r.id),
                    locator: "document.querySelector(\"#review-status\").value".into(),
                    text: "Approved".into(),
                    exact: true,
                };
                inst(13, vec![r.title.clone()], check)
            })
            .collect(),
    );
    // 14: replace a CMS page's content (checked on the storefront).
    groups.push(
        spread(&s.pages, 3, 5, |p| p.active && s.search_pages(&p.title).len() == 1)
            .iter()
            .zip(PAGE_TEXTS)
            .map(|(p, t)| {
                let url = format!("{M}/{}", p.identifier);
                let check = Check::Html {
                    url,
                    locator: "document.querySelector(\".cms-content\").innerText".into(),
                    text: (*t).into(),
                    exact: true,
                };
                inst(14, vec![p.title.clone(), (*t).into()], check)
            })
            .collect(),
    );
    // 15-19: navigation.
    groups.push(
        spread(&products, 6, 53, one_product)
            .iter()
            .map(|p| inst(15, vec![p.name.clone()], Check::Url(format!("{M}/admin/catalog/product/edit/id/{}/", p.id))))
            .collect(),
    );
    groups.push(
        REPORTS.iter().map(|(name, path)| inst(16, vec![(*name).into()], Check::Url(format!("{M}{path}")))).collect(),
    );
    groups.push(
        spread(&s.customers, 5, 71, one_customer)
            .iter()
            .map(|c| Inst {
                start: format!("{M}/admin/customer/index/edit/id/{}/", c.id),
                ..inst(17, vec![c.name()], Check::Url(format!("{M}/admin/customer/index/edit/id/{}/?tab=orders", c.id)))
            })
            .collect(),
    );
    groups.push(
        spread(&s.pages, 5, 3, |p| s.search_pages(&p.title).len() == 1)
            .iter()
            .map(|p| inst(18, vec![p.title.clone()], Check::Url(format!("{M}/admin/cms/page/edit/page_id/{}/", p.id))))
            .collect(),
    );
    groups.push(
        spread(&s.categories, 5, 4, |c| c.id > 2)
            .iter()
            .map(|c| {
                inst(19, vec![c.name.clone()], Check::Url(format!("{M}/admin/catalog/category/edit/id/{}/", c.id)))
            })
            .collect(),
    );
    TEMPLATES.iter().zip(groups).collect()
}

/// The 114 Magento tasks of version `v`.
pub fn generate(v: Version) -> Vec<GeneratedTask> {
    assemble(Site::Magento, instances(v), Site::Magento.n_tasks())
}
