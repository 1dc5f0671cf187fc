//! Catalog pages of the Magento admin: the product grid (keyword search,
//! pagination), the product form (v1 WYSIWYG description, v2 Page Builder,
//! M3), and the category tree with its edit and add forms.

use skillshift_common::Version;

use super::data::{money, parse_price, price_input, Product};
use super::ui::{checkbox, grid, pager, search_form, select, text_input};
use super::{err, ok, Ctx, Out};
use crate::kit::paging::paginate;
use crate::kit::text::{esc, slug};
use crate::kit::web::{Req, Resp};

const PER_PAGE: usize = 20;

pub fn route(ctx: &mut Ctx, req: &Req, parts: &[&str], id: Option<u32>, parent: Option<u32>) -> Out {
    match parts {
        ["catalog", "product"] | ["catalog", "product", "index"] => product_grid(ctx, req).into(),
        ["catalog", "product", "edit", ..] => match id.and_then(|id| ctx.store.product(id).cloned()) {
            Some(p) => product_form(ctx, Some(&p)).into(),
            None => err("/admin/catalog/product/", "This product doesn't exist."),
        },
        ["catalog", "product", "new", ..] => product_form(ctx, None).into(),
        ["catalog", "product", "save", ..] if req.post => save_product(ctx, req, id),
        ["catalog", "category"] | ["catalog", "category", "index"] => category_page(ctx, 2, None).into(),
        ["catalog", "category", "edit", ..] => match id.filter(|i| ctx.store.category(*i).is_some()) {
            Some(id) => category_page(ctx, id, None).into(),
            None => err("/admin/catalog/category/", "This category no longer exists."),
        },
        ["catalog", "category", "add", ..] => category_page(ctx, 0, Some(parent.unwrap_or(2))).into(),
        ["catalog", "category", "save", ..] if req.post => save_category(ctx, req, id, parent),
        _ => super::generic(ctx, &format!("/admin/{}", parts.join("/"))),
    }
}

fn product_grid(ctx: &Ctx, req: &Req) -> Resp {
    let kw = req.q("search").unwrap_or("");
    let found = ctx.store.search_products(kw);
    let (rows, pages) = paginate(&found, req.page(), PER_PAGE);
    let rows: Vec<(String, Vec<String>)> = rows
        .iter()
        .map(|p| {
            (
                format!("product-{}", p.id),
                vec![
                    p.id.to_string(),
                    esc(&p.name),
                    "Simple Product".into(),
                    "Default".into(),
                    esc(&p.sku),
                    money(p.price_cents),
                    p.qty.to_string(),
                    "Catalog, Search".into(),
                    if p.enabled { "Enabled" } else { "Disabled" }.into(),
                    format!("<a href=\"/admin/catalog/product/edit/id/{}/\">Edit</a>", p.id),
                ],
            )
        })
        .collect();
    let cols = [
        ("id", "ID"),
        ("name", "Name"),
        ("type", "Type"),
        ("set", "Attribute Set"),
        ("sku", "SKU"),
        ("price", "Price"),
        ("qty", "Quantity"),
        ("visibility", "Visibility"),
        ("status", "Status"),
        ("actions", "Action"),
    ];
    let body = format!(
        "{}{}{}",
        search_form("/admin/catalog/product/", kw),
        pager("/admin/catalog/product/", kw, req.page().min(pages), pages, found.len()),
        grid("Products", &cols, &rows, 1)
    );
    let actions = "<a class=\"action-primary\" href=\"/admin/catalog/product/new/set/4/type/simple/\">Add Product</a>";
    ctx.page("Products", actions, &body)
}

/// The product form; `None` is a new product.
fn product_form(ctx: &Ctx, p: Option<&Product>) -> Resp {
    let title = p.map(|p| p.name.clone()).unwrap_or_else(|| "New Product".into());
    let action = match p {
        Some(p) => format!("/admin/catalog/product/save/id/{}/", p.id),
        None => "/admin/catalog/product/save/".into(),
    };
    let leaves: Vec<String> = ctx.store.categories.iter().filter(|c| c.id > 2).map(|c| c.name.clone()).collect();
    let leaf_refs: Vec<&str> = leaves.iter().map(String::as_str).collect();
    let cat = p.and_then(|p| ctx.store.category(p.category)).map(|c| c.name.clone()).unwrap_or_default();
    let desc = p.map(|p| p.description.clone()).unwrap_or_default();
    let general = format!(
        "<fieldset><legend>Product Details</legend>{}{}{}{}{}{}{}</fieldset>",
        checkbox("product-status", "status", "Enable Product", p.is_none_or(|p| p.enabled)),
        text_input("product-name", "name", "Product Name", p.map(|p| p.name.as_str()).unwrap_or("")),
        text_input("product-sku", "sku", "SKU", p.map(|p| p.sku.as_str()).unwrap_or("")),
        text_input("product-price", "price", "Price", &p.map(|p| price_input(p.price_cents)).unwrap_or_default()),
        text_input("product-qty", "qty", "Quantity", &p.map(|p| p.qty.to_string()).unwrap_or_default()),
        select("product-category", "category", "Categories", &leaf_refs, &cat),
        select(
            "product-visibility",
            "visibility",
            "Visibility",
            &["Not Visible Individually", "Catalog", "Search", "Catalog, Search"],
            "Catalog, Search"
        ),
    );
    let content = description_editor(ctx.version, "product-description", "description", "Description", &desc);
    let save_buttons = "<a href=\"/admin/catalog/product/\">Back</a> \
        <button type=\"submit\" class=\"primary\">Save</button> \
        <button type=\"button\" aria-haspopup=\"menu\" aria-expanded=\"false\" aria-controls=\"save-split\">Select a save option</button>\
        <ul role=\"menu\" id=\"save-split\" hidden><li><button role=\"menuitem\" type=\"submit\" name=\"back\" value=\"new\">Save &amp; New</button></li>\
        <li><button role=\"menuitem\" type=\"submit\" name=\"back\" value=\"close\">Save &amp; Close</button></li></ul>";
    let body = format!(
        "<form method=\"post\" action=\"{action}\" aria-label=\"Product\"><div class=\"page-actions\">{save_buttons}</div>{general}\
         <section class=\"fieldset-wrapper\"><h2><button type=\"button\" aria-expanded=\"false\" aria-controls=\"product-content\">Content</button></h2>\
         <div id=\"product-content\" hidden>{content}</div></section>\
         <section><h2><button type=\"button\" aria-expanded=\"false\" aria-controls=\"product-seo\">Search Engine Optimization</button></h2>\
         <div id=\"product-seo\" hidden>{}</div></section></form>",
        text_input("product-url-key", "url_key", "URL Key", p.map(|p| p.url_key.as_str()).unwrap_or("")),
    );
    ctx.page(&title, "", &body)
}

/// A rich-text field: v1's WYSIWYG textarea with "Show / Hide Editor" (M2/M3
/// v1), or v2's Page Builder preview whose "Edit with Page Builder" opens a
/// full-screen stage where content is a Text block (M2/M3/M4 v2).
pub fn description_editor(version: Version, id: &str, name: &str, label: &str, value: &str) -> String {
    if version == Version::V1 {
        return format!(
            "<div class=\"admin__field wysiwyg\"><label for=\"{id}\">{label}</label><div>\
             <button type=\"button\" aria-expanded=\"true\" aria-controls=\"{id}-toolbar\">Show / Hide Editor</button>\
             <div id=\"{id}-toolbar\" class=\"mce-toolbar\"><button type=\"button\">Insert Widget...</button> \
             <button type=\"button\">Insert Image...</button> <button type=\"button\">Insert Variable...</button></div>\
             <textarea id=\"{id}\" name=\"{name}\" rows=\"8\">{}</textarea></div></div>",
            esc(value)
        );
    }
    let preview = if value.is_empty() { "<p>Empty Page Builder content</p>".to_string() } else { esc(value) };
    format!(
        "<div class=\"pagebuilder-wysiwyg-wrapper\"><p id=\"{id}-label\"><strong>{label}</strong></p>\
         <div class=\"pagebuilder-preview\" aria-labelledby=\"{id}-label\">{preview}</div>\
         <button type=\"button\" data-opens=\"{id}-stage\">Edit with Page Builder</button></div>\
         <div role=\"dialog\" aria-modal=\"true\" id=\"{id}-stage\" class=\"pagebuilder-stage\" aria-labelledby=\"{id}-stage-h\" hidden>\
         <h2 id=\"{id}-stage-h\">Page Builder: {label}</h2>\
         <button type=\"button\" data-closes>Close Full Screen</button>\
         <section aria-label=\"Elements\" class=\"pagebuilder-panel\"><h3>Elements</h3><h4>Layout</h4>\
         <button type=\"button\">Row</button> <button type=\"button\">Column</button> <h4>Elements</h4>\
         <button type=\"button\" aria-expanded=\"false\" aria-controls=\"{id}-text-block\">Text</button> \
         <button type=\"button\">Heading</button> <button type=\"button\">Buttons</button> <h4>Media</h4>\
         <button type=\"button\" aria-expanded=\"false\" aria-controls=\"{id}-image-block\">Image</button></section>\
         <div class=\"pagebuilder-canvas\"><p>Drag content types or Row here</p>\
         <div id=\"{id}-text-block\" class=\"pagebuilder-content-type\" hidden>\
         <div role=\"toolbar\" aria-label=\"Text options\"><button type=\"button\">Move</button><button type=\"button\">Settings</button>\
         <button type=\"button\">Hide</button><button type=\"button\">Duplicate</button><button type=\"button\">Remove</button></div>\
         <label for=\"{id}\">Text</label><textarea id=\"{id}\" name=\"{name}\" rows=\"6\">{}</textarea></div>\
         <div id=\"{id}-image-block\" class=\"pagebuilder-content-type\" hidden><button type=\"button\">Select from Gallery</button>\
         <button type=\"button\">Upload Image</button></div></div></div>",
        esc(value)
    )
}

fn save_product(ctx: &mut Ctx, req: &Req, id: Option<u32>) -> Out {
    let back = match id {
        Some(id) => format!("/admin/catalog/product/edit/id/{id}/"),
        None => "/admin/catalog/product/new/set/4/type/simple/".into(),
    };
    let name = req.f("name").unwrap_or("").trim().to_string();
    let sku = req.f("sku").unwrap_or("").trim().to_string();
    if name.is_empty() || sku.is_empty() {
        return err(back, "The value of attribute \"Product Name\" and \"SKU\" must be set.");
    }
    let Some(price) = req.f("price").and_then(parse_price) else {
        return err(back, "Please enter a valid price.");
    };
    let Some(qty) = req.f("qty").and_then(|q| q.trim().parse::<u32>().ok()) else {
        return err(back, "Please enter a valid quantity.");
    };
    let category =
        ctx.store.categories.iter().find(|c| Some(c.name.as_str()) == req.f("category")).map(|c| c.id).unwrap_or(3);
    let s = &mut *ctx.store;
    let id = match id {
        Some(id) => id,
        None => {
            let id = s.products.iter().map(|p| p.id).max().unwrap_or(0) + 1;
            s.products.push(Product {
                id,
                name: name.clone(),
                sku: sku.clone(),
                price_cents: price,
                qty,
                enabled: true,
                category,
                description: String::new(),
                url_key: slug(&name),
            });
            id
        }
    };
    let Some(p) = s.products.iter_mut().find(|p| p.id == id) else {
        return err("/admin/catalog/product/", "This product doesn't exist.");
    };
    p.name = name;
    p.sku = sku;
    p.price_cents = price;
    p.qty = qty;
    p.enabled = req.f("status") == Some("1");
    p.category = category;
    if let Some(d) = req.f("description") {
        p.description = d.to_string();
    }
    if let Some(k) = req.f("url_key").filter(|k| !k.trim().is_empty()) {
        p.url_key = slug(k);
    }
    let to = match req.f("back") {
        Some("close") => "/admin/catalog/product/".to_string(),
        Some("new") => "/admin/catalog/product/new/set/4/type/simple/".to_string(),
        _ => format!("/admin/catalog/product/edit/id/{id}/"),
    };
    ok(to, "You saved the product.")
}

/// The category tree beside the form of category `id` (or a new child of `parent`).
fn category_page(ctx: &Ctx, id: u32, parent: Option<u32>) -> Resp {
    let s = &*ctx.store;
    let tree = tree_html(ctx, 1);
    let cat = s.category(id);
    let (title, action) = match (cat, parent) {
        (_, Some(parent)) => ("New Category".to_string(), format!("/admin/catalog/category/save/parent/{parent}/")),
        (Some(c), None) => (format!("{} (ID: {})", c.name, c.id), format!("/admin/catalog/category/save/id/{}/", c.id)),
        (None, None) => ("Categories".to_string(), "/admin/catalog/category/save/".to_string()),
    };
    let products: Vec<String> = s
        .products
        .iter()
        .filter(|p| Some(p.category) == cat.filter(|_| parent.is_none()).map(|c| c.id))
        .take(50)
        .map(|p| format!("<li>{} ({})</li>", esc(&p.name), esc(&p.sku)))
        .collect();
    let add_parent = cat.map(|c| c.id).unwrap_or(2);
    let body = format!(
        "<div class=\"category-layout\"><nav aria-label=\"Category tree\">\
         <a href=\"/admin/catalog/category/add/parent/1/\">Add Root Category</a> \
         <a href=\"/admin/catalog/category/add/parent/{add_parent}/\">Add Subcategory</a>{tree}</nav>\
         <form method=\"post\" action=\"{action}\" aria-label=\"Category\"><div class=\"page-actions\">\
         <button type=\"submit\" class=\"primary\">Save</button></div>\
         <fieldset><legend>General</legend>{}{}</fieldset>\
         <section><h2>Products in Category</h2><ul>{}</ul></section></form></div>",
        checkbox("category-enabled", "is_active", "Enable Category", cat.is_none_or(|c| c.enabled) || parent.is_some()),
        text_input(
            "category-name",
            "name",
            "Category Name",
            cat.filter(|_| parent.is_none()).map(|c| c.name.as_str()).unwrap_or("")
        ),
        products.join("")
    );
    ctx.page(&title, "", &body)
}

fn tree_html(ctx: &Ctx, root: u32) -> String {
    let s = &*ctx.store;
    let children: Vec<_> = s.categories.iter().filter(|c| c.parent == Some(root)).collect();
    if children.is_empty() {
        return String::new();
    }
    let mut h = String::from("<ul>");
    for c in children {
        let n = s.products.iter().filter(|p| p.category == c.id).count();
        h.push_str(&format!(
            "<li><a href=\"/admin/catalog/category/edit/id/{}/\">{}</a> ({n}){}</li>",
            c.id,
            esc(&c.name),
            tree_html(ctx, c.id)
        ));
    }
    h.push_str("</ul>");
    h
}

fn save_category(ctx: &mut Ctx, req: &Req, id: Option<u32>, parent: Option<u32>) -> Out {
    let name = req.f("name").unwrap_or("").trim().to_string();
    let s = &mut *ctx.store;
    if name.is_empty() {
        return err("/admin/catalog/category/", "The \"Category Name\" attribute value is empty.");
    }
    let enabled = req.f("is_active") == Some("1");
    let id = match (id, parent) {
        (Some(id), _) => {
            let Some(c) = s.categories.iter_mut().find(|c| c.id == id) else {
                return err("/admin/catalog/category/", "This category no longer exists.");
            };
            c.name = name;
            c.enabled = enabled;
            id
        }
        (None, parent) => {
            let id = s.categories.iter().map(|c| c.id).max().unwrap_or(0) + 1;
            let parent = parent.filter(|p| s.category(*p).is_some()).unwrap_or(2);
            s.categories.push(super::data::Category { id, name, parent: Some(parent), enabled });
            id
        }
    };
    ok(format!("/admin/catalog/category/edit/id/{id}/"), "You saved the category.")
}
