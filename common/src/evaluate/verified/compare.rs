//! `ValueComparator` (`core/evaluation/value_comparator.py`): the expected
//! value's shape leads. An object compares key by key (a missing key fails,
//! an extra one fails unless extra keys are allowed); a list compares in
//! order, or greedily without order (each expected item takes the first
//! unmatched equal actual item; every actual item must be taken); a leaf
//! compares by its type's equality. Each difference is one assertion message.
//! An expected object with no key (left so when every expected post field is
//! ignored) is an error, as the package raises on it: it checks nothing.

use serde_json::Value;

use super::error::VerifiedError;
use super::normalize::Norm;
use super::pytext;
use super::types::{str_eq_raw, Ctx, Kind};
use super::urlnorm::{Sites, UrlOpts};

/// How to compare.
#[derive(Clone, Copy)]
pub struct Opts<'a> {
    pub ordered: bool,
    pub ignored_values_keys: &'a [&'a str],
    pub ignore_extra_keys: bool,
    pub sites: &'a Sites,
}

/// The failures found comparing `actual` with `expected` (empty: equal); `Err` where the package
/// raises (an expected object with no key), which makes the evaluator an error.
pub fn compare(actual: &Norm, expected: &Norm, path: &str, o: &Opts) -> Result<Vec<String>, VerifiedError> {
    // A raw list or dict is compared as one, as Python dispatches on the value's type.
    let (lifted_a, lifted_e);
    let actual = match lift(actual) {
        Some(l) => {
            lifted_a = l;
            &lifted_a
        }
        None => actual,
    };
    let expected = match lift(expected) {
        Some(l) => {
            lifted_e = l;
            &lifted_e
        }
        None => expected,
    };
    if expected.is_none() && actual.is_none() {
        return Ok(Vec::new());
    }
    if expected.is_none() || actual.is_none() {
        return Ok(vec![format!("{path}: expected {}, got {}", expected.to_json(), actual.to_json())]);
    }
    match expected {
        Norm::Map(exp) => {
            let Norm::Map(act) = actual else {
                return Ok(vec![format!("{path}: expected a structured object, got {}", actual.to_json())]);
            };
            if exp.is_empty() {
                return Err(VerifiedError::EmptyExpectedObject { path: path.to_string() });
            }
            let mut out = Vec::new();
            let missing: Vec<&str> =
                exp.iter().filter(|(k, _)| !act.iter().any(|(a, _)| a == k)).map(|(k, _)| k.as_str()).collect();
            let extra: Vec<&str> =
                act.iter().filter(|(k, _)| !exp.iter().any(|(e, _)| e == k)).map(|(k, _)| k.as_str()).collect();
            if !extra.is_empty() && !o.ignore_extra_keys {
                out.push(format!("{path}: extra keys {extra:?}"));
            }
            if !missing.is_empty() {
                out.push(format!("{path}: missing keys {missing:?}"));
            }
            for (k, e) in exp {
                if o.ignored_values_keys.contains(&k.as_str()) {
                    continue;
                }
                if let Some((_, a)) = act.iter().find(|(ak, _)| ak == k) {
                    out.extend(compare(a, e, &format!("{path}.{k}"), o)?);
                }
            }
            Ok(out)
        }
        Norm::Seq(exp) => {
            let Norm::Seq(act) = actual else {
                return Ok(vec![format!("{path}: expected an array, got {}", actual.to_json())]);
            };
            if o.ordered {
                let mut out = Vec::new();
                for (i, (e, a)) in exp.iter().zip(act).enumerate() {
                    out.extend(compare(a, e, &format!("{path}[{i}]"), o)?);
                }
                if exp.len() != act.len() {
                    out.push(format!("{path}: expected {} items in order, got {}", exp.len(), act.len()));
                }
                return Ok(out);
            }
            let mut taken = vec![false; act.len()];
            let mut missing = 0;
            for (i, e) in exp.iter().enumerate() {
                let mut hit = None;
                for j in (0..act.len()).filter(|&j| !taken[j]) {
                    if compare(&act[j], e, &format!("{path}[{i}]"), o)?.is_empty() {
                        hit = Some(j);
                        break;
                    }
                }
                match hit {
                    Some(j) => taken[j] = true,
                    None => missing += 1,
                }
            }
            let extra = taken.iter().filter(|t| !**t).count();
            if missing > 0 || extra > 0 {
                return Ok(vec![format!(
                    "{path}: {} of {} expected items matched, {missing} missing, {extra} extra (expected {}, got {})",
                    exp.len() - missing,
                    exp.len(),
                    expected.to_json(),
                    actual.to_json()
                )]);
            }
            Ok(Vec::new())
        }
        _ => {
            if leaf_eq(expected, actual, o.sites) {
                Ok(Vec::new())
            } else {
                Ok(vec![format!("{path}: expected {}, got {}", expected.to_json(), actual.to_json())])
            }
        }
    }
}

fn lift(n: &Norm) -> Option<Norm> {
    match n {
        Norm::Raw(Value::Array(items)) => Some(Norm::Seq(items.iter().cloned().map(Norm::Raw).collect())),
        Norm::Raw(Value::Object(map)) => {
            Some(Norm::Map(map.iter().map(|(k, v)| (k.clone(), Norm::Raw(v.clone()))).collect()))
        }
        _ => None,
    }
}

/// `expected == actual` for leaves (a typed value, or a raw one).
fn leaf_eq(expected: &Norm, actual: &Norm, sites: &Sites) -> bool {
    match (expected, actual) {
        (Norm::Typed(e), Norm::Typed(a)) => e.eq(a, sites),
        (Norm::Typed(e), Norm::Raw(Value::String(s))) if e.kind == Kind::Str => {
            let opts = UrlOpts::default();
            str_eq_raw(e, s, &Ctx { sites, derender: false, url: &opts })
        }
        (Norm::Raw(e), Norm::Raw(a)) => pytext::py_eq(e, a),
        (Norm::Raw(Value::String(s)), Norm::Typed(a)) if a.kind == Kind::Str => {
            let opts = UrlOpts::default();
            str_eq_raw(a, s, &Ctx { sites, derender: false, url: &opts })
        }
        _ => false,
    }
}
