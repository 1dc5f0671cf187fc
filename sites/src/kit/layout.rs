//! Layout pieces every site draws the same way: the HTML document shell
//! (with the client-side behaviours script of the sites contract) and the
//! marker of the current page in navigation.

use super::text::esc;

/// A complete HTML document: `<html {html_attrs}>`, the escaped `title`, one
/// `<style>` with `css` in order, the behaviours script, and `body` inside
/// `<body class="{body_class}">`.
pub fn document(html_attrs: &str, title: &str, css: &[&str], body_class: &str, body: &str) -> String {
    format!(
        "<!doctype html><html {html_attrs}><head><meta charset=\"utf-8\"><title>{}</title><style>{}</style>\
         <script src=\"/static/behaviors.js\" defer></script></head><body class=\"{body_class}\">{body}</body></html>",
        esc(title),
        css.concat()
    )
}

/// ` aria-current="page"` on the link to the page being shown, else nothing.
pub fn current(on: bool) -> &'static str {
    if on {
        " aria-current=\"page\""
    } else {
        ""
    }
}

/// A navigation list item linking `href` (already escaped) with `label`, marked when `on`.
pub fn nav_item(href: &str, label: &str, on: bool) -> String {
    format!("<li><a href=\"{href}\"{}>{label}</a></li>", current(on))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_shell_escapes_the_title_and_loads_the_behaviours() {
        let html = document("lang=\"en\"", "A & B", &["a{}", "b{}"], "bare", "<main></main>");
        assert_eq!(
            html,
            "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>A &amp; B</title><style>a{}b{}</style>\
             <script src=\"/static/behaviors.js\" defer></script></head><body class=\"bare\"><main></main></body></html>"
        );
        assert_eq!(nav_item("/x?tab=a", "A", true), "<li><a href=\"/x?tab=a\" aria-current=\"page\">A</a></li>");
        assert_eq!(nav_item("/x?tab=b", "B", false), "<li><a href=\"/x?tab=b\">B</a></li>");
    }
}
