//! Customer pages of the Magento admin: the customer grid, the customer edit
//! page with its tabs (Customer View, Account Information, Addresses,
//! Orders), and v2's "Login as Customer" (M6 button and confirmation dialog,
//! M8 log, M9 "Allow remote shopping assistance").

use super::data::{money, Customer, GROUPS};
use super::ui::{checkbox, dl, grid, pager, search_form, select, text_input};
use super::{err, ok, Ctx, Out};
use crate::kit::layout::nav_item;
use crate::kit::paging::paginate;
use crate::kit::text::{date_of, esc};
use crate::kit::web::{Req, Resp};

const PER_PAGE: usize = 20;

pub fn route(ctx: &mut Ctx, req: &Req, parts: &[&str], id: Option<u32>) -> Out {
    match parts {
        ["customer", "index"] | ["customer"] => customer_grid(ctx, req).into(),
        ["customer", "index", "edit", ..] => match id.and_then(|id| ctx.store.customer(id).cloned()) {
            Some(c) => customer_edit(ctx, req, &c).into(),
            None => err("/admin/customer/index/", "Something went wrong while editing the customer."),
        },
        ["customer", "index", "save", ..] if req.post => save_customer(ctx, req, id),
        ["loginascustomer", "login", "login", ..] if req.post && ctx.v2() => login_as(ctx, id),
        ["loginascustomer_log", "log", "index"] if ctx.v2() => log_grid(ctx).into(),
        _ => super::generic(ctx, &format!("/admin/{}", parts.join("/"))),
    }
}

fn customer_grid(ctx: &Ctx, req: &Req) -> Resp {
    let kw = req.q("search").unwrap_or("");
    let found = ctx.store.search_customers(kw);
    let (rows, pages) = paginate(&found, req.page(), PER_PAGE);
    let rows: Vec<(String, Vec<String>)> = rows
        .iter()
        .map(|c| {
            (
                format!("customer-{}", c.id),
                vec![
                    c.id.to_string(),
                    esc(&c.name()),
                    esc(&c.email),
                    esc(&c.group),
                    esc(&c.phone),
                    c.zip.clone(),
                    "United States".into(),
                    esc(&c.region),
                    esc(&c.city),
                    c.created.clone(),
                    format!("<a href=\"/admin/customer/index/edit/id/{}/\">Edit</a>", c.id),
                ],
            )
        })
        .collect();
    let cols = [
        ("id", "ID"),
        ("name", "Name"),
        ("email", "Email"),
        ("group", "Group"),
        ("phone", "Phone"),
        ("zip", "ZIP"),
        ("country", "Country"),
        ("region", "State/Province"),
        ("city", "City"),
        ("since", "Customer Since"),
        ("actions", "Action"),
    ];
    let body = format!(
        "{}{}{}",
        search_form("/admin/customer/index/", kw),
        pager("/admin/customer/index/", kw, req.page().min(pages), pages, found.len()),
        grid("Customers", &cols, &rows, 1)
    );
    ctx.page("Customers", "<a class=\"action-primary\" href=\"/admin/customer/index/new/\">Add New Customer</a>", &body)
}

/// v2's "Login as Customer" button and its confirmation dialog (M6, M7).
pub fn login_as_customer_button(c: &Customer) -> String {
    format!(
        "<button type=\"button\" data-opens=\"lac-confirm\">Login as Customer</button>\
         <div role=\"dialog\" aria-modal=\"true\" id=\"lac-confirm\" aria-labelledby=\"lac-confirm-h\" hidden>\
         <h2 id=\"lac-confirm-h\">You are about to Login as Customer</h2>\
         <p>Actions taken while in \"Login as Customer\" will affect actual customer data.</p>\
         <form method=\"post\" action=\"/admin/loginascustomer/login/login/customer_id/{}/\">\
         <button type=\"button\" data-closes>Cancel</button> <button type=\"submit\" class=\"primary\">Login as Customer</button></form></div>",
        c.id
    )
}

fn customer_edit(ctx: &Ctx, req: &Req, c: &Customer) -> Resp {
    let tab = req.q("tab").unwrap_or("view");
    let base = format!("/admin/customer/index/edit/id/{}/", c.id);
    let tabs = [
        ("view", "Customer View"),
        ("account", "Account Information"),
        ("addresses", "Addresses"),
        ("orders", "Orders"),
    ];
    let nav: String = tabs.iter().map(|(k, label)| nav_item(&format!("{base}?tab={k}"), label, *k == tab)).collect();
    let content = match tab {
        "account" => {
            let mut h = format!(
                "<fieldset><legend>Account Information</legend>{}{}{}{}{}",
                select("customer-website", "website", "Associate to Website", &["Main Website"], "Main Website"),
                select("customer-group-select", "group", "Group", GROUPS, &c.group),
                text_input("customer-firstname", "firstname", "First Name", &c.first),
                text_input("customer-lastname", "lastname", "Last Name", &c.last),
                text_input("customer-email", "email", "Email", &c.email),
            );
            if ctx.v2() {
                h.push_str(&checkbox("customer-assistance", "assistance_allowed", "Allow remote shopping assistance", c.remote_assistance));
                h.push_str("<input type=\"hidden\" name=\"assistance_field\" value=\"1\">");
            }
            h.push_str("<input type=\"hidden\" name=\"tab\" value=\"account\"></fieldset>");
            h
        }
        "addresses" => format!(
            "<section><h2>Default Billing Address</h2><address>{}<br>{}, {}, {}<br>United States<br>T: {}</address></section>",
            esc(&c.name()),
            c.city,
            c.region,
            c.zip,
            c.phone
        ),
        "orders" => {
            let rows: Vec<(String, Vec<String>)> = ctx
                .store
                .orders
                .iter()
                .filter(|o| o.customer == c.id)
                .map(|o| {
                    (
                        format!("order-{}", o.id),
                        vec![
                            format!("<a href=\"/admin/sales/order/view/order_id/{}/\">{}</a>", o.id, o.increment),
                            o.date.clone(),
                            money(o.grand_total()),
                            o.status.clone(),
                        ],
                    )
                })
                .collect();
            grid("Orders", &[("order", "Order"), ("date", "Purchased"), ("total", "Order Total"), ("status", "Status")], &rows, 0)
        }
        _ => format!(
            "<section aria-labelledby=\"personal-h\"><h2 id=\"personal-h\">Personal Information</h2>{}</section>\
             <section><h2>Default Billing Address</h2><address>{}<br>{}, {}</address></section>",
            dl(&[
                ("Last Logged In", "Never (Offline)".into()),
                ("Account Lock", "Unlocked".into()),
                ("Confirmed email", "Confirmed".into()),
                ("Account Created", c.created.clone()),
                ("Account Created in", "Default Store View".into()),
                ("Customer Group", esc(&c.group)),
            ]),
            esc(&c.name()),
            c.city,
            c.region
        ),
    };
    let mut outside = vec![
        "<a href=\"/admin/customer/index/\">Back</a>".to_string(),
        format!(
            "<button type=\"button\" data-opens=\"delete-confirm\">Delete Customer</button>\
             <div role=\"dialog\" aria-modal=\"true\" id=\"delete-confirm\" aria-labelledby=\"delete-confirm-q\" hidden>\
             <p id=\"delete-confirm-q\">Are you sure you want to do this?</p><button type=\"button\" data-closes>Cancel</button></div>"
        ),
        format!("<a href=\"/admin/sales/order_create/start/customer_id/{}/\">Create Order</a>", c.id),
    ];
    if ctx.v2() {
        outside.insert(1, login_as_customer_button(c));
    }
    let body = format!(
        "<div class=\"page-actions\">{}</div>\
         <form method=\"post\" action=\"/admin/customer/index/save/id/{id}/\" aria-label=\"Customer\">\
         <div class=\"page-actions\"><button type=\"submit\" name=\"op\" value=\"reset\">Reset Password</button> \
         <button type=\"submit\" name=\"back\" value=\"edit\">Save and Continue Edit</button> \
         <button type=\"submit\" class=\"primary\">Save Customer</button></div>\
         <nav aria-label=\"Customer Information\"><ul class=\"tabs\">{nav}</ul></nav>{content}</form>",
        outside.join(" "),
        id = c.id
    );
    ctx.page(&c.name(), "", &body)
}

fn save_customer(ctx: &mut Ctx, req: &Req, id: Option<u32>) -> Out {
    let v2 = ctx.v2();
    let Some(c) = id.and_then(|id| ctx.store.customers.iter_mut().find(|c| c.id == id)) else {
        return err("/admin/customer/index/", "Something went wrong while saving the customer.");
    };
    let edit = format!("/admin/customer/index/edit/id/{}/", c.id);
    if req.f("op") == Some("reset") {
        return ok(edit, "The customer will receive an email with a link to reset password.");
    }
    if req.f("tab") == Some("account") {
        let first = req.f("firstname").unwrap_or("").trim();
        let last = req.f("lastname").unwrap_or("").trim();
        let email = req.f("email").unwrap_or("").trim();
        if first.is_empty() || last.is_empty() || !email.contains('@') {
            return err(
                format!("{edit}?tab=account"),
                "\"First Name\", \"Last Name\" and a valid \"Email\" are required.",
            );
        }
        let Some(group) = req.f("group").filter(|g| GROUPS.contains(g)) else {
            return err(format!("{edit}?tab=account"), "The customer group is not valid.");
        };
        c.first = first.to_string();
        c.last = last.to_string();
        c.email = email.to_string();
        c.group = group.to_string();
        if v2 && req.f("assistance_field").is_some() {
            c.remote_assistance = req.f("assistance_allowed") == Some("1");
        }
    }
    let to = if req.f("back") == Some("edit") { edit } else { "/admin/customer/index/".to_string() };
    ok(to, "You saved the customer.")
}

fn login_as(ctx: &mut Ctx, id: Option<u32>) -> Out {
    let Some(c) = id.and_then(|id| ctx.store.customer(id).cloned()) else {
        return err("/admin/customer/index/", "Customer not found.");
    };
    if !c.remote_assistance {
        return err(
            format!("/admin/customer/index/edit/id/{}/", c.id),
            "The user has no permission to login as customer: the customer has not enabled \"Allow remote shopping assistance\".",
        );
    }
    let n = ctx.store.login_log.len() as i64;
    ctx.store.login_log.push(super::data::LoginLogEntry { customer: c.id, time: date_of(20_786 + n) });
    Resp::redirect(format!("/customer/account/index/id/{}/", c.id)).into()
}

fn log_grid(ctx: &Ctx) -> Resp {
    let rows: Vec<(String, Vec<String>)> = ctx
        .store
        .login_log
        .iter()
        .enumerate()
        .rev()
        .map(|(i, e)| {
            let email = ctx.store.customer(e.customer).map(|c| c.email.clone()).unwrap_or_default();
            (
                format!("log-{i}"),
                vec![(i + 1).to_string(), e.time.clone(), e.customer.to_string(), esc(&email), "admin".into()],
            )
        })
        .collect();
    let cols = [
        ("id", "ID"),
        ("time", "Time"),
        ("customer", "Customer ID"),
        ("email", "Customer Email"),
        ("admin", "Admin Username"),
    ];
    let body = format!(
        "{}{}",
        pager("/admin/loginascustomer_log/log/index/", "", 1, 1, rows.len()),
        grid("Login as Customer Log", &cols, &rows, 0)
    );
    ctx.page("Login as Customer Log", "", &body)
}
