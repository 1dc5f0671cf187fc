//! Every key a summary may hold (docs/formats.md#summary), as a tree.
//!
//! Two users: `leaderboard validate` refuses an entry with a key outside the
//! tree (per-task records, trajectories or any other per-task judgement never
//! travel inside an entry), and a gates file's `metric` must be a path in the
//! tree that ends at a number. The tree is the summary's schema plus its
//! readiness additions (`intervals`, `cost`, `gates`, `ledger.rates.timeout`,
//! `simulated`) and `failure_categories` (counts per cell, with up to three
//! trajectory file names each, never their content); nothing else.

use skillshift_common::ids::{Condition, Site};

/// What a position of the summary holds. `null` is accepted everywhere; other
/// rules say where it is not enough.
#[derive(Debug, Clone)]
pub enum Node {
    Num,
    Str,
    Bool,
    /// An interval `[lo, hi]`.
    Pair,
    /// These keys and no other.
    Obj(Vec<(&'static str, Node)>),
    /// Keys accepted by the predicate (described by the string), each holding the node.
    Map(fn(&str) -> bool, &'static str, Box<Node>),
    /// An array of the node.
    List(Box<Node>),
}

impl Node {
    /// What the node holds, in words.
    pub fn describe(&self) -> &'static str {
        match self {
            Node::Num => "a number",
            Node::Str => "a string",
            Node::Bool => "a boolean",
            Node::Pair => "an interval [lo, hi]",
            Node::Obj(_) | Node::Map(..) => "an object",
            Node::List(_) => "a list",
        }
    }
}

fn obj(fields: Vec<(&'static str, Node)>) -> Node {
    Node::Obj(fields)
}

fn per_site(node: impl Fn() -> Node) -> Node {
    obj(Site::ALL.iter().map(|s| (s.as_str(), node())).collect())
}

fn per_condition(node: impl Fn() -> Node) -> Node {
    obj(Condition::ALL.iter().map(|c| (c.as_str(), node())).collect())
}

fn ten() -> Node {
    obj(vec![("websites", per_site(|| Node::Num)), ("conditions", per_condition(|| Node::Num)), ("overall", Node::Num)])
}

fn is_k(key: &str) -> bool {
    !key.is_empty() && key.bytes().all(|b| b.is_ascii_digit())
}

const METRIC_NAMES: [&str; 4] = ["SR", "AS", "ASC", "SFR"];

/// A key of `reasons`: a metric (`"ASC"`), or one of its values
/// (`"SFR.websites.wordpress"`, `"SFR.conditions.src"`, `"SFR.overall"`,
/// `"SFR.cells.gitlab.src"`).
pub fn is_reason_key(key: &str) -> bool {
    let parts: Vec<&str> = key.split('.').collect();
    let site = |s: &str| Site::ALL.iter().any(|x| x.as_str() == s);
    let cond = |c: &str| Condition::ALL.iter().any(|x| x.as_str() == c);
    match parts.as_slice() {
        [m, rest @ ..] if METRIC_NAMES.contains(m) => match rest {
            [] | ["overall"] => true,
            ["websites", s] => site(s),
            ["conditions", c] => cond(c),
            ["cells", s, c] => site(s) && cond(c),
            _ => false,
        },
        _ => false,
    }
}

fn latency() -> Node {
    obj(vec![("n", Node::Num), ("p50", Node::Num), ("p90", Node::Num)])
}

/// The whole summary.
pub fn summary() -> Node {
    let cell = || {
        obj(vec![
            ("SR", Node::Num),
            ("AS", Node::Num),
            ("ASC", Node::Num),
            ("SFR", Node::Num),
            ("evaluable", Node::Num),
            ("invalid", Node::Num),
            ("skill_calls", Node::Num),
        ])
    };
    let rates = [
        "attempt_success",
        "invalid_attempt",
        "timeout",
        "first_attempt_completion",
        "eventual_completion",
        "operational_delivery",
        "retry_rate",
    ];
    let ledger = obj(vec![
        (
            "attempts",
            obj(["all", "evaluable", "success", "failure", "timeout", "error"].map(|k| (k, Node::Num)).to_vec()),
        ),
        (
            "units",
            obj(["all", "invalid", "first_attempt_success", "eventual_success"].map(|k| (k, Node::Num)).to_vec()),
        ),
        ("rates", obj(rates.map(|k| (k, Node::Num)).to_vec())),
        ("latency_ms", obj(vec![("success", latency()), ("non_success", latency()), ("all", latency())])),
    ]);
    let reliability = obj(vec![
        ("reps", Node::Num),
        ("k", Node::List(Box::new(Node::Num))),
        ("pass@k", Node::Map(is_k, "a k such as \"1\"", Box::new(ten()))),
        ("pass^k", Node::Map(is_k, "a k such as \"1\"", Box::new(ten()))),
        ("gap", Node::Map(is_k, "a k such as \"1\"", Box::new(Node::Num))),
        ("warning", Node::Str),
    ]);
    let intervals = obj(vec![
        ("level", Node::Num),
        ("method", obj(vec![("cells", Node::Str), ("marginals", Node::Str)])),
        (
            "SR",
            obj(vec![
                ("websites", per_site(|| Node::Pair)),
                ("conditions", per_condition(|| Node::Pair)),
                ("overall", Node::Pair),
                ("cells", per_site(|| per_condition(|| Node::Pair))),
            ]),
        ),
        ("ledger", obj(rates[..6].iter().map(|&k| (k, Node::Pair)).collect())),
    ]);
    let cost =
        obj(["total_usd", "per_unit_usd", "tokens_in", "tokens_out", "llm_calls"].map(|k| (k, Node::Num)).to_vec());
    let result = obj(vec![
        ("name", Node::Str),
        ("metric", Node::Str),
        ("observed", Node::Num),
        ("min", Node::Num),
        ("max", Node::Num),
        ("interval", Node::Pair),
        ("verdict", Node::Str),
        ("reason", Node::Str),
    ]);
    let missing = obj(vec![("name", Node::Str), ("metric", Node::Str), ("bound", Node::Str)]);
    let gates = obj(vec![
        ("readiness", Node::Str),
        ("results", Node::List(Box::new(result))),
        ("missing", Node::List(Box::new(missing))),
    ]);
    obj(vec![
        ("schema", Node::Str),
        ("method", Node::Str),
        ("source", Node::Str),
        ("config_digest", Node::Str),
        ("simulated", Node::Bool),
        ("metrics", obj(METRIC_NAMES.map(|m| (m, ten())).to_vec())),
        ("intervals", intervals),
        (
            "n",
            obj(vec![
                ("tasks", per_site(|| Node::Num)),
                ("reps", Node::Num),
                (
                    "skill_calls",
                    obj(vec![
                        ("websites", per_site(|| Node::Num)),
                        ("conditions", per_condition(|| Node::Num)),
                        ("overall", Node::Num),
                    ]),
                ),
            ]),
        ),
        ("reasons", Node::Map(is_reason_key, "a metric or a metric's value path", Box::new(Node::Str))),
        ("cells", per_site(|| per_condition(cell))),
        ("ledger", ledger),
        ("reliability", reliability),
        ("cost", cost),
        ("gates", gates),
        ("failure_categories", per_site(|| per_condition(failure_groups))),
    ])
}

fn is_category(key: &str) -> bool {
    !key.is_empty() && key.len() <= 64 && key.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_')
}

/// A cell's failure categories: category -> count and representative trajectory files.
fn failure_groups() -> Node {
    Node::Map(
        is_category,
        "a failure category (lowercase letters, digits and _)",
        Box::new(obj(vec![("count", Node::Num), ("trajectories", Node::List(Box::new(Node::Str)))])),
    )
}

/// A key or a value outside the schema.
#[derive(Debug, Clone, PartialEq)]
pub enum Violation {
    /// `path` is not a key the schema has.
    UnknownKey { path: String, allowed: String },
    /// `path` holds a container where the schema has a value of another kind.
    Shape { path: String, expected: &'static str, found: &'static str },
}

fn kind(v: &serde_json::Value) -> &'static str {
    match v {
        serde_json::Value::Null => "null",
        serde_json::Value::Bool(_) => "a boolean",
        serde_json::Value::Number(_) => "a number",
        serde_json::Value::String(_) => "a string",
        serde_json::Value::Array(_) => "a list",
        serde_json::Value::Object(_) => "an object",
    }
}

fn join(path: &str, key: &str) -> String {
    if path.is_empty() {
        key.to_string()
    } else {
        format!("{path}.{key}")
    }
}

/// Every key of `v` outside `node`, and every container where a value belongs.
/// A scalar of the wrong kind is left to the rules that know what it means.
pub fn check(node: &Node, v: &serde_json::Value, path: &str, out: &mut Vec<Violation>) {
    use serde_json::Value;
    let shape = |out: &mut Vec<Violation>| {
        out.push(Violation::Shape { path: path.to_string(), expected: node.describe(), found: kind(v) })
    };
    match (node, v) {
        (_, Value::Null) => {}
        (Node::Obj(fields), Value::Object(m)) => {
            for (k, x) in m {
                match fields.iter().find(|(name, _)| name == k) {
                    Some((_, child)) => check(child, x, &join(path, k), out),
                    None => out.push(Violation::UnknownKey {
                        path: join(path, k),
                        allowed: fields.iter().map(|(n, _)| *n).collect::<Vec<_>>().join(", "),
                    }),
                }
            }
        }
        (Node::Map(accepts, what, child), Value::Object(m)) => {
            for (k, x) in m {
                if accepts(k) {
                    check(child, x, &join(path, k), out);
                } else {
                    out.push(Violation::UnknownKey { path: join(path, k), allowed: what.to_string() });
                }
            }
        }
        (Node::List(child), Value::Array(items)) => {
            for (i, x) in items.iter().enumerate() {
                check(child, x, &format!("{path}[{i}]"), out);
            }
        }
        (Node::Pair, Value::Array(items)) if items.len() != 2 || !items.iter().all(Value::is_number) => shape(out),
        (Node::Pair, Value::Array(_)) => {}
        (Node::Num | Node::Str | Node::Bool | Node::Pair, Value::Array(_) | Value::Object(_)) => shape(out),
        (Node::List(_), Value::Object(_)) | (Node::Obj(_) | Node::Map(..), Value::Array(_)) => shape(out),
        _ => {}
    }
}

/// Why a dotted path names no node of the tree ([`at`]): the key that is not
/// in the schema, or the position that cannot be entered.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PathError {
    /// A key that is none of an object's fields; `inside` is the path walked (`the summary` at the top).
    #[error("'{key}' is not a key of {inside} (it holds {})", .holds.join(", "))]
    NotAField { key: String, inside: String, holds: Vec<&'static str> },
    /// A key a map does not accept; `keys` describes those it does.
    #[error("'{key}' is not a key of {inside} (its keys are {keys})")]
    NotAKey { key: String, inside: String, keys: &'static str },
    /// A path that goes on past a position holding `holds`.
    #[error("{path} is {holds}, not an object")]
    NotAnObject { path: String, holds: &'static str },
}

/// The node at a dotted path, or why there is none.
pub fn at<'a>(node: &'a Node, path: &str) -> Result<&'a Node, PathError> {
    let mut here = node;
    let mut walked = String::new();
    for seg in path.split('.') {
        let next = match here {
            Node::Obj(fields) => {
                fields.iter().find(|(k, _)| *k == seg).map(|(_, n)| n).ok_or_else(|| PathError::NotAField {
                    key: seg.to_string(),
                    inside: if walked.is_empty() { "the summary".to_string() } else { walked.clone() },
                    holds: fields.iter().map(|(k, _)| *k).collect(),
                })?
            }
            Node::Map(accepts, keys, child) => {
                if !accepts(seg) {
                    return Err(PathError::NotAKey { key: seg.to_string(), inside: walked, keys });
                }
                child
            }
            other => return Err(PathError::NotAnObject { path: walked, holds: other.describe() }),
        };
        walked = join(&walked, seg);
        here = next;
    }
    Ok(here)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn unknown_keys_anywhere_are_found_and_known_ones_pass() {
        let schema = summary();
        let v = json!({
            "schema": "skillshift.summary/1", "method": "M", "records": [{"uid": "x"}],
            "cells": {"gitlab": {"src": {"SR": 1.0, "judgement": "wrong"}}},
            "reasons": {"SR.cells.gitlab.src": "why", "task 4": "failed"},
            "reliability": {"pass@k": {"1": {"overall": 3.0}, "best": {}}},
            "ledger": {"rates": {"timeout": 0.1}}, "intervals": {"SR": {"overall": [1.0, 2.0]}},
            "gates": {"readiness": "pass", "results": [{"name": "g", "extra": 1}]}
        });
        let mut out = Vec::new();
        check(&schema, &v, "", &mut out);
        let paths: Vec<String> = out
            .iter()
            .map(|x| match x {
                Violation::UnknownKey { path, .. } | Violation::Shape { path, .. } => path.clone(),
            })
            .collect();
        assert_eq!(
            paths,
            [
                "records",
                "cells.gitlab.src.judgement",
                "reasons.task 4",
                "reliability.pass@k.best",
                "gates.results[0].extra"
            ]
        );
        let mut out = Vec::new();
        check(&schema, &json!({"cost": {"total_usd": {"per_task": [1, 2]}}}), "", &mut out);
        assert!(matches!(&out[..], [Violation::Shape { path, .. }] if path == "cost.total_usd"), "{out:?}");
    }

    #[test]
    fn paths_resolve_to_numbers_or_say_which_key_is_wrong() {
        let s = summary();
        assert!(matches!(at(&s, "ledger.rates.timeout"), Ok(Node::Num)));
        assert!(matches!(at(&s, "reliability.pass@k.2.overall"), Ok(Node::Num)));
        assert!(matches!(at(&s, "intervals.SR.overall"), Ok(Node::Pair)));
        let e = at(&s, "ledger.rates.timout").unwrap_err().to_string();
        assert!(e.starts_with("'timout' is not a key of ledger.rates (it holds attempt_success,"), "{e}");
        assert!(at(&s, "costs.total_usd").unwrap_err().to_string().contains("not a key of the summary"));
        assert!(at(&s, "ledger.rates.timeout.x").unwrap_err().to_string().contains("ledger.rates.timeout is a number"));
        assert!(is_reason_key("SFR") && is_reason_key("SR.cells.magento.tgt-exec") && !is_reason_key("SR.cells.x"));
    }
}
