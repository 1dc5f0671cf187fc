//! The ids an attempt's observations print ([`Numbering`]), independent of the browser's own.

use std::collections::HashMap;

use super::AxTree;

/// The ids an attempt's observations print: 1, 2, 3, ... in the order the nodes are first seen,
/// per document, so the same page met the same way prints the same ids whatever the browser's own
/// ids are. A node keeps its number for as long as its document lives (a later observation of the
/// same document prints it with the same id); a node without a DOM node (a list marker, a
/// pseudo-element's text) is numbered by its place under its parent. Inline text boxes, which
/// are never printed, keep Chrome's ids.
#[derive(Debug, Default)]
pub struct Numbering {
    /// The documents seen last, newest last, each with the numbers of its nodes.
    documents: Vec<(String, DocumentNumbers)>,
}

#[derive(Debug, Default)]
struct DocumentNumbers {
    next: u64,
    by_key: HashMap<String, u64>,
}

/// Documents whose numbers are kept (the attempt's tabs and the pages just left).
const KEPT_DOCUMENTS: usize = 16;

impl Numbering {
    /// Rewrites the ids of `tree` (a tree of the document `document`: any string naming it
    /// uniquely, such as its `performance.timeOrigin`) with the attempt's numbers.
    pub fn apply(&mut self, document: &str, tree: &mut AxTree) {
        let at = match self.documents.iter().position(|(d, _)| d == document) {
            Some(i) => i,
            None => {
                if self.documents.len() >= KEPT_DOCUMENTS {
                    self.documents.remove(0);
                }
                self.documents.push((document.to_string(), DocumentNumbers::default()));
                self.documents.len() - 1
            }
        };
        let numbers = &mut self.documents[at].1;
        let mut parent_of: HashMap<&str, (&str, usize)> = HashMap::new();
        for n in &tree.nodes {
            for (i, c) in n.children.iter().enumerate() {
                parent_of.entry(c.as_str()).or_insert((n.id.as_str(), i));
            }
        }
        let mut renamed: HashMap<String, String> = HashMap::with_capacity(tree.nodes.len());
        for n in &tree.nodes {
            if n.role == "InlineTextBox" {
                continue;
            }
            let key = match (n.backend_id, parent_of.get(n.id.as_str())) {
                (Some(b), _) => format!("b{b}"),
                (None, Some((parent, i))) => format!("{}/{i}", renamed.get(*parent).map_or(*parent, String::as_str)),
                (None, None) => format!("a{}", n.id),
            };
            let number = *numbers.by_key.entry(key).or_insert_with(|| {
                numbers.next += 1;
                numbers.next
            });
            renamed.insert(n.id.clone(), number.to_string());
        }
        for n in &mut tree.nodes {
            if let Some(new) = renamed.get(&n.id) {
                n.id = new.clone();
            }
            for c in &mut n.children {
                if let Some(new) = renamed.get(c.as_str()) {
                    *c = new.clone();
                }
            }
        }
    }
}
