//! Markdown rendering of a [`Doc`]: headings, pipe tables and paragraphs.

use super::{Block, Doc};

fn escape(s: &str) -> String {
    s.replace('|', "\\|")
}

pub fn render(doc: &Doc) -> String {
    let mut out = format!("# {}\n", doc.title);
    for b in &doc.blocks {
        match b {
            Block::Heading(h) => out.push_str(&format!("\n## {}\n\n", escape(h))),
            Block::Table { header, rows } => {
                out.push_str(&format!("| {} |\n", header.iter().map(|h| escape(h)).collect::<Vec<_>>().join(" | ")));
                let align: Vec<&str> = (0..header.len()).map(|i| if i == 0 { "---" } else { "---:" }).collect();
                out.push_str(&format!("| {} |\n", align.join(" | ")));
                for r in rows {
                    let cells: Vec<String> = r.iter().map(|c| escape(&c.text)).collect();
                    out.push_str(&format!("| {} |\n", cells.join(" | ")));
                }
                out.push('\n');
            }
            Block::Note(n) => out.push_str(&format!("{}\n\n", escape(n))),
        }
    }
    out
}
