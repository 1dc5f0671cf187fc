//! Plain-text rendering of a [`Doc`]: aligned columns, first column left,
//! the others right-aligned.

use super::{width, Block, Doc};

/// Align one table: header and rows, two spaces between columns.
pub fn table(header: &[String], rows: &[Vec<super::Cell>]) -> String {
    let ncol = header.len().max(rows.iter().map(Vec::len).max().unwrap_or(0));
    let mut w = vec![0usize; ncol];
    let all = std::iter::once(header.to_vec()).chain(rows.iter().map(|r| r.iter().map(|c| c.text.clone()).collect()));
    let lines: Vec<Vec<String>> = all.collect();
    for line in &lines {
        for (i, c) in line.iter().enumerate() {
            w[i] = w[i].max(width(c));
        }
    }
    let mut out = String::new();
    for line in &lines {
        let mut s = String::new();
        for (i, c) in line.iter().enumerate() {
            let pad = " ".repeat(w[i] - width(c));
            if i == 0 {
                s.push_str(c);
                s.push_str(&pad);
            } else {
                s.push_str("  ");
                s.push_str(&pad);
                s.push_str(c);
            }
        }
        out.push_str(s.trim_end());
        out.push('\n');
    }
    out
}

pub fn render(doc: &Doc) -> String {
    format!("{}\n{}", doc.title, blocks(&doc.blocks))
}

/// Blocks without a title, for a section of another page.
pub fn blocks(blocks: &[Block]) -> String {
    let mut out = String::new();
    for b in blocks {
        match b {
            Block::Heading(h) => out.push_str(&format!("\n{h}\n")),
            Block::Table { header, rows } => out.push_str(&table(header, rows)),
            Block::Note(n) => out.push_str(&format!("{n}\n")),
        }
    }
    out
}
