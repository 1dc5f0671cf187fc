//! HTML rendering of a [`Doc`]: one self-contained page (inline CSS, no
//! external resources), hover text as `title` attributes.

use super::{Block, Doc};

pub use skillshift_common::html::escape;

use crate::style::STYLE;

pub fn render(doc: &Doc) -> String {
    let mut out = format!(
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>{}</title>\n<style>{STYLE}</style>\n</head>\n<body>\n<h1>{}</h1>\n",
        escape(&doc.title),
        escape(&doc.title)
    );
    for b in &doc.blocks {
        match b {
            Block::Heading(h) => out.push_str(&format!("<h2>{}</h2>\n", escape(h))),
            Block::Table { header, rows } => {
                out.push_str("<table>\n<tr>");
                for h in header {
                    out.push_str(&format!("<th>{}</th>", escape(h)));
                }
                out.push_str("</tr>\n");
                for r in rows {
                    out.push_str("<tr>");
                    for c in r {
                        match &c.hover {
                            Some(t) => out.push_str(&format!("<td title=\"{}\">{}</td>", escape(t), escape(&c.text))),
                            None => out.push_str(&format!("<td>{}</td>", escape(&c.text))),
                        }
                    }
                    out.push_str("</tr>\n");
                }
                out.push_str("</table>\n");
            }
            Block::Note(n) => out.push_str(&format!("<p>{}</p>\n", escape(n))),
        }
    }
    out.push_str("</body>\n</html>\n");
    out
}
