//! `extract_jsonpath_value` (`core/utils/jsonpath_utils.py`) over the
//! JSONPath that WebArena-Verified's tasks write: `$.a.b`, `$.a[0].b`,
//! `$['a-b']`, `[*]`, `[?(@.k == v)]`, and the regex-key forms `$.^re$` and
//! `^re$` (top-level keys matched by `re.match`). No match is retried once
//! with the JSON held in string values parsed (`deserialize_nested_json`).

use serde_json::Value;

use super::pytext;

/// Whether a post-data or response-content key is a JSONPath or a regex key.
pub fn is_jsonpath_key(key: &str) -> bool {
    key.starts_with('$') || pytext::is_regexp(key)
}

#[derive(Debug, Clone, PartialEq)]
enum Step {
    Field(String),
    Index(i64),
    Wild,
    Filter { field: String, value: Value },
}

fn parse(path: &str) -> Option<Vec<Step>> {
    let rest = path.strip_prefix('$')?;
    let chars: Vec<char> = rest.chars().collect();
    let mut i = 0;
    let mut steps = Vec::new();
    while i < chars.len() {
        match chars[i] {
            '.' => {
                i += 1;
                let start = i;
                while i < chars.len() && chars[i] != '.' && chars[i] != '[' {
                    i += 1;
                }
                let name: String = chars[start..i].iter().collect();
                if name.is_empty() {
                    return None;
                }
                steps.push(if name == "*" { Step::Wild } else { Step::Field(name) });
            }
            '[' => {
                let close = (i..chars.len()).find(|&j| chars[j] == ']' && !in_quotes(&chars[i..j]))?;
                let inner: String = chars[i + 1..close].iter().collect();
                let inner = inner.trim();
                i = close + 1;
                if inner == "*" {
                    steps.push(Step::Wild);
                } else if let Some(q) = quoted(inner) {
                    steps.push(Step::Field(q));
                } else if let Ok(n) = inner.parse::<i64>() {
                    steps.push(Step::Index(n));
                } else if let Some(f) = inner.strip_prefix("?(").and_then(|f| f.strip_suffix(')')) {
                    let (lhs, rhs) = f.split_once("==")?;
                    let field = lhs.trim().strip_prefix("@.")?.to_string();
                    let rhs = rhs.trim();
                    let value = quoted(rhs).map(Value::String).or_else(|| serde_json::from_str(rhs).ok())?;
                    steps.push(Step::Filter { field, value });
                } else {
                    return None;
                }
            }
            _ => return None,
        }
    }
    Some(steps)
}

fn in_quotes(chars: &[char]) -> bool {
    chars.iter().filter(|c| **c == '\'' || **c == '"').count() % 2 == 1
}

fn quoted(s: &str) -> Option<String> {
    let s = s.trim();
    for q in ['\'', '"'] {
        if s.len() >= 2 && s.starts_with(q) && s.ends_with(q) {
            return Some(s[1..s.len() - 1].to_string());
        }
    }
    None
}

fn find<'a>(data: &'a Value, steps: &[Step]) -> Vec<&'a Value> {
    let mut current = vec![data];
    for step in steps {
        let mut next = Vec::new();
        for v in current {
            match (step, v) {
                (Step::Field(name), Value::Object(m)) => next.extend(m.get(name)),
                (Step::Index(n), Value::Array(items)) => {
                    let idx = if *n < 0 { items.len() as i64 + n } else { *n };
                    if let Ok(i) = usize::try_from(idx) {
                        next.extend(items.get(i));
                    }
                }
                (Step::Wild, Value::Array(items)) => next.extend(items.iter()),
                (Step::Wild, Value::Object(m)) => next.extend(m.values()),
                (Step::Filter { field, value }, Value::Array(items)) => {
                    next.extend(items.iter().filter(|item| item.get(field).is_some_and(|f| pytext::py_eq(f, value))))
                }
                _ => {}
            }
        }
        current = next;
    }
    current
}

/// `deserialize_nested_json`: an object's string values parsed as JSON where they are JSON.
fn deserialize_nested(v: &Value) -> Value {
    match v {
        Value::Object(m) => Value::Object(
            m.iter()
                .map(|(k, v)| {
                    let nv = match v {
                        Value::String(s) => serde_json::from_str(s).unwrap_or_else(|_| v.clone()),
                        other => deserialize_nested(other),
                    };
                    (k.clone(), nv)
                })
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.iter().map(deserialize_nested).collect()),
        other => other.clone(),
    }
}

/// `extract_jsonpath_value(data, path, strict=False)`: one value, a list for several (or for a filter),
/// `None` (JSON null) for none.
pub fn extract(data: &Value, path: &str) -> Value {
    let regex_key = if path.starts_with("$.^") && path.ends_with('$') {
        Some(&path[2..])
    } else if pytext::is_regexp(path) {
        Some(path)
    } else {
        None
    };
    if let Some(pattern) = regex_key {
        let Value::Object(m) = data else { return Value::Null };
        let Some(re) = pytext::py_regex(pattern, false) else { return Value::Null };
        let hits: Vec<&Value> = m.iter().filter(|(k, _)| pytext::re_match(&re, k)).map(|(_, v)| v).collect();
        return match hits.as_slice() {
            [] => Value::Null,
            [one] => (*one).clone(),
            many => Value::Array(many.iter().map(|v| (*v).clone()).collect()),
        };
    }
    let Some(steps) = parse(path) else { return Value::Null };
    let mut hits: Vec<Value> = find(data, &steps).into_iter().cloned().collect();
    if hits.is_empty() {
        let parsed = deserialize_nested(data);
        hits = find(&parsed, &steps).into_iter().cloned().collect();
    }
    match hits.len() {
        0 => Value::Null,
        1 if !path.contains("?(") => hits.remove(0),
        _ => Value::Array(hits),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use serde_json::json;

    #[test]
    fn paths_regex_keys_filters_and_nested_json() {
        let d = json!({"note": {"note": "lgtm"}, "items": [{"name": "a"}, {"name": "b"}],
                       "reply_to_submission_2[comment]": "good", "m": "[{\"newProduct\": 1, \"attributes\": \"x\"}]"});
        assert_eq!(extract(&d, "$.note.note"), json!("lgtm"));
        assert_eq!(extract(&d, "$.items[1].name"), json!("b"));
        assert_eq!(extract(&d, "$.items[*].name"), json!(["a", "b"]));
        assert_eq!(extract(&d, r"$.^reply_to_submission_\d+\[comment\]$"), json!("good"));
        assert_eq!(extract(&d, "$['m'][?(@.newProduct == 1)].attributes"), json!(["x"]));
        assert_eq!(extract(&d, "$.nothing"), Value::Null);
    }
}
