//! Sales pages of the Magento admin: the order grid, the order view with its
//! header buttons (Edit, Cancel, Send Email, Credit Memo, Hold, Invoice,
//! Ship, Reorder; v2 adds "Login as Customer", M7), the order comment form,
//! and the invoice, shipment and credit memo grids derived from orders.

use super::data::{money, Order};
use super::pages_customers::login_as_customer_button;
use super::ui::{dl, grid, pager, search_form};
use super::{err, ok, Ctx, Out};
use crate::kit::paging::paginate;
use crate::kit::text::esc;
use crate::kit::web::{Req, Resp};

const PER_PAGE: usize = 20;

pub fn route(ctx: &mut Ctx, req: &Req, parts: &[&str], id: Option<u32>) -> Out {
    match parts {
        ["sales", "order"] | ["sales", "order", "index"] => order_grid(ctx, req).into(),
        ["sales", "order", "view", ..] => match id.and_then(|id| ctx.store.order(id).cloned()) {
            Some(o) => order_view(ctx, &o).into(),
            None => err("/admin/sales/order/", "This order no longer exists."),
        },
        ["sales", "order", action, ..] if req.post => order_action(ctx, req, action, id),
        ["sales", kind @ ("invoice" | "shipment" | "creditmemo")] => document_grid(ctx, req, kind).into(),
        _ => super::generic(ctx, &format!("/admin/{}", parts.join("/"))),
    }
}

fn order_grid(ctx: &Ctx, req: &Req) -> Resp {
    let kw = req.q("search").unwrap_or("");
    let found = ctx.store.search_orders(kw);
    let (rows, pages) = paginate(&found, req.page(), PER_PAGE);
    let rows: Vec<(String, Vec<String>)> = rows
        .iter()
        .map(|o| {
            let name = ctx.store.customer(o.customer).map(|c| c.name()).unwrap_or_default();
            (
                format!("order-{}", o.id),
                vec![
                    o.increment.clone(),
                    o.date.clone(),
                    esc(&name),
                    esc(&name),
                    money(o.grand_total()),
                    money(o.grand_total()),
                    o.status.clone(),
                    format!("<a href=\"/admin/sales/order/view/order_id/{}/\">View</a>", o.id),
                ],
            )
        })
        .collect();
    let cols = [
        ("id", "ID"),
        ("date", "Purchase Date"),
        ("billto", "Bill-to Name"),
        ("shipto", "Ship-to Name"),
        ("base-total", "Grand Total (Base)"),
        ("total", "Grand Total (Purchased)"),
        ("status", "Status"),
        ("actions", "Action"),
    ];
    let body = format!(
        "{}{}{}",
        search_form("/admin/sales/order/", kw),
        pager("/admin/sales/order/", kw, req.page().min(pages), pages, found.len()),
        grid("Orders", &cols, &rows, 0)
    );
    ctx.page(
        "Orders",
        "<a class=\"action-primary\" href=\"/admin/sales/order_create/start/\">Create New Order</a>",
        &body,
    )
}

/// A header button that asks for confirmation in a dialog before posting `action`.
fn confirm_button(order: u32, action: &str, label: &str, question: &str) -> String {
    format!(
        "<button type=\"button\" data-opens=\"confirm-{action}\">{label}</button>\
         <div role=\"dialog\" aria-modal=\"true\" id=\"confirm-{action}\" aria-labelledby=\"confirm-{action}-q\" hidden>\
         <p id=\"confirm-{action}-q\">{question}</p>\
         <form method=\"post\" action=\"/admin/sales/order/{action}/order_id/{order}/\">\
         <button type=\"button\" data-closes>Cancel</button> <button type=\"submit\" class=\"primary\">OK</button></form></div>"
    )
}

/// A header button that posts `action` at once.
fn post_button(order: u32, action: &str, label: &str) -> String {
    format!(
        "<form class=\"inline\" method=\"post\" action=\"/admin/sales/order/{action}/order_id/{order}/\">\
         <button type=\"submit\">{label}</button></form>"
    )
}

fn order_view(ctx: &Ctx, o: &Order) -> Resp {
    let s = &*ctx.store;
    let c = s.customer(o.customer);
    let open = matches!(o.status.as_str(), "Pending" | "Processing");
    let mut buttons = vec!["<a href=\"/admin/sales/order/\">Back</a>".to_string()];
    if ctx.v2() {
        if let Some(c) = c {
            buttons.push(login_as_customer_button(c));
        }
    }
    if open {
        buttons.push(confirm_button(o.id, "cancel", "Cancel", "Are you sure you want to cancel this order?"));
    }
    buttons.push(confirm_button(
        o.id,
        "email",
        "Send Email",
        "Are you sure you want to send an order email to customer?",
    ));
    if o.status == "Complete" {
        buttons.push(post_button(o.id, "creditmemo", "Credit Memo"));
    }
    if open {
        buttons.push(post_button(o.id, "hold", "Hold"));
    }
    if o.status == "On Hold" {
        buttons.push(post_button(o.id, "unhold", "Unhold"));
    }
    if o.status == "Pending" {
        buttons.push(post_button(o.id, "invoice", "Invoice"));
    }
    if o.status == "Processing" {
        buttons.push(post_button(o.id, "ship", "Ship"));
    }
    buttons.push(post_button(o.id, "reorder", "Reorder"));
    if open {
        buttons.insert(
            1,
            confirm_button(
                o.id,
                "edit",
                "Edit",
                "Are you sure? This order will be canceled and a new one will be created instead.",
            ),
        );
    }
    let customer_link = c
        .map(|c| format!("<a href=\"/admin/customer/index/edit/id/{}/\">{}</a>", c.id, esc(&c.name())))
        .unwrap_or_default();
    let items: Vec<(String, Vec<String>)> = o
        .items
        .iter()
        .enumerate()
        .map(|(i, it)| {
            (
                format!("item-{i}"),
                vec![
                    esc(&it.name),
                    esc(&it.sku),
                    money(it.price_cents),
                    it.qty.to_string(),
                    money(it.price_cents * u64::from(it.qty)),
                ],
            )
        })
        .collect();
    let comments: String = o
        .comments
        .iter()
        .rev()
        .map(|t| format!("<li><p>{}</p><small>Customer Not Notified</small></li>", esc(t)))
        .collect();
    let paid = if matches!(o.status.as_str(), "Pending" | "Canceled") { 0 } else { o.grand_total() };
    let refunded = if o.status == "Closed" { o.grand_total() } else { 0 };
    let body = format!(
        "<div class=\"page-actions\">{buttons}</div>\
         <nav aria-label=\"Order View\"><ul class=\"tabs\"><li><a href=\"/admin/sales/order/view/order_id/{id}/\" aria-current=\"page\">Information</a></li>\
         <li><a href=\"/admin/sales/invoice/\">Invoices</a></li><li><a href=\"/admin/sales/creditmemo/\">Credit Memos</a></li>\
         <li><a href=\"/admin/sales/shipment/\">Shipments</a></li></ul></nav>\
         <section aria-labelledby=\"info-h\"><h2 id=\"info-h\">Order &amp; Account Information</h2>\
         <h3>Order # {inc} (the order confirmation email was sent)</h3>{order_dl}\
         <h3>Account Information</h3>{account_dl}</section>\
         <section aria-labelledby=\"addr-h\"><h2 id=\"addr-h\">Address Information</h2><h3>Billing Address</h3>\
         <address>{addr}</address></section>\
         <section aria-labelledby=\"items-h\"><h2 id=\"items-h\">Items Ordered</h2>{items}</section>\
         <section aria-labelledby=\"total-h\"><h2 id=\"total-h\">Order Total</h2>\
         <h3>Notes for this Order</h3><form method=\"post\" action=\"/admin/sales/order/addComment/order_id/{id}/\">\
         <div class=\"admin__field\"><label for=\"history-comment\">Comment</label><textarea id=\"history-comment\" name=\"comment\" rows=\"3\"></textarea></div>\
         <div class=\"admin__field\"><input type=\"checkbox\" id=\"history-notify\" name=\"notify\" value=\"1\"><label for=\"history-notify\">Notify Customer by Email</label></div>\
         <button type=\"submit\">Submit Comment</button></form><ul class=\"note-list\" aria-label=\"Comments History\">{comments}</ul>\
         <h3>Order Totals</h3>{totals}</section>",
        buttons = buttons.join(" "),
        id = o.id,
        inc = o.increment,
        order_dl = dl(&[("Order Date", o.date.clone()), ("Order Status", o.status.clone()), ("Purchased From", "Main Website / Main Website Store / Default Store View".into())]),
        account_dl = dl(&[
            ("Customer Name", customer_link),
            ("Email", c.map(|c| esc(&c.email)).unwrap_or_default()),
            ("Customer Group", c.map(|c| esc(&c.group)).unwrap_or_default()),
        ]),
        addr = c.map(|c| format!("{}<br>{}, {}, {}<br>United States<br>T: {}", esc(&c.name()), c.city, c.region, c.zip, c.phone)).unwrap_or_default(),
        items = grid("Items Ordered", &[("product", "Product"), ("sku", "SKU"), ("price", "Price"), ("qty", "Qty"), ("row-total", "Row Total")], &items, 0),
        totals = dl(&[
            ("Subtotal", money(o.subtotal())),
            ("Shipping &amp; Handling", money(o.shipping_cents)),
            ("Grand Total", money(o.grand_total())),
            ("Total Paid", money(paid)),
            ("Total Refunded", money(refunded)),
            ("Total Due", money(o.grand_total() - paid)),
        ]),
    );
    ctx.page(&format!("# {}", o.increment), "", &body)
}

fn order_action(ctx: &mut Ctx, req: &Req, action: &str, id: Option<u32>) -> Out {
    let Some(o) = id.and_then(|id| ctx.store.orders.iter_mut().find(|o| o.id == id)) else {
        return err("/admin/sales/order/", "This order no longer exists.");
    };
    let back = format!("/admin/sales/order/view/order_id/{}/", o.id);
    let open = matches!(o.status.as_str(), "Pending" | "Processing");
    let (ok_status, message, error): (Option<&str>, &str, &str) = match action {
        "cancel" => (open.then_some("Canceled"), "You canceled the order.", "You have not canceled the item."),
        "hold" => (open.then_some("On Hold"), "You put the order on hold.", "You have not put the order on hold."),
        "unhold" => (
            (o.status == "On Hold").then_some("Processing"),
            "You released the order from holding status.",
            "The order was not on hold.",
        ),
        "invoice" => (
            (o.status == "Pending").then_some("Processing"),
            "The invoice has been created.",
            "The order does not allow an invoice to be created.",
        ),
        "ship" => (
            (o.status == "Processing").then_some("Complete"),
            "The shipment has been created.",
            "Cannot do shipment for the order.",
        ),
        "creditmemo" => (
            (o.status == "Complete").then_some("Closed"),
            "You created the credit memo.",
            "The order does not allow a creditmemo to be created.",
        ),
        "email" => (Some(""), "You sent the order email.", ""),
        "reorder" => (Some(""), "You created the order draft. Finish it under Create New Order.", ""),
        "edit" => (open.then_some(""), "The order is open for editing.", "This order cannot be edited."),
        "addComment" => {
            let text = req.f("comment").unwrap_or("").trim();
            if text.is_empty() {
                return err(back, "Please enter a comment.");
            }
            o.comments.push(text.to_string());
            return ok(back, "You added a comment to the order.");
        }
        _ => return err(back, "Unknown order action."),
    };
    match ok_status {
        Some(status) => {
            if !status.is_empty() {
                o.status = status.to_string();
            }
            ok(back, message)
        }
        None => err(back, error),
    }
}

fn document_grid(ctx: &Ctx, req: &Req, kind: &str) -> Resp {
    let (title, states): (&str, &[&str]) = match kind {
        "invoice" => ("Invoices", &["Processing", "Complete", "Closed"]),
        "shipment" => ("Shipments", &["Complete", "Closed"]),
        _ => ("Credit Memos", &["Closed"]),
    };
    let docs: Vec<&Order> = ctx.store.orders.iter().filter(|o| states.contains(&o.status.as_str())).rev().collect();
    let (rows, pages) = paginate(&docs, req.page(), PER_PAGE);
    let rows: Vec<(String, Vec<String>)> = rows
        .iter()
        .map(|o| {
            let name = ctx.store.customer(o.customer).map(|c| c.name()).unwrap_or_default();
            (
                format!("{kind}-{}", o.id),
                vec![
                    format!("{:09}", o.id + 100_000),
                    o.date.clone(),
                    o.increment.clone(),
                    esc(&name),
                    money(o.grand_total()),
                    format!("<a href=\"/admin/sales/order/view/order_id/{}/\">View</a>", o.id),
                ],
            )
        })
        .collect();
    let cols = [
        ("doc", title),
        ("date", "Date"),
        ("order", "Order #"),
        ("billto", "Bill-to Name"),
        ("amount", "Amount"),
        ("actions", "Action"),
    ];
    let base = format!("/admin/sales/{kind}/");
    let body =
        format!("{}{}", pager(&base, "", req.page().min(pages), pages, docs.len()), grid(title, &cols, &rows, 0));
    ctx.page(title, "", &body)
}
