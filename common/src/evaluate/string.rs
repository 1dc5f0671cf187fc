//! `string_match`: WebArena's `StringEvaluator` on the agent's final answer.
//!
//! The answer is cleaned once on arrival and once more inside every
//! comparison (so twice in all), the reference once: surrounding whitespace
//! (Python's), then one pair of surrounding quotes (single quotes first),
//! then case. Inner whitespace is kept. `must_include` is a substring test,
//! except that when the list holds a single item of one character, that
//! character must be one of the answer's `nltk.word_tokenize` tokens (so
//! `"1"` is not found in `"10"`, nor in `"there is 1. it is open."`, where
//! Punkt keeps `1.` whole). ` |OR| ` is not split here. Approaches multiply
//! in the order `exact_match`, `must_include`, `fuzzy_match`; for
//! `fuzzy_match: "N/A"` an answer other than `N/A` goes to the judge's
//! "unachievable reason" check against `eval.string_note`, whose verdict
//! replaces the score so far (WebArena's assignment, not a product).

use super::judge::Judge;
use super::python::strip;
use super::tokenize::WordTokenizer;
use super::Verdict;
use crate::task::{FuzzyMatch, ReferenceAnswers};

/// WebArena's `clean_answer`.
pub fn clean_answer(answer: &str) -> String {
    let s = strip(answer);
    let inner = if (s.starts_with('\'') && s.ends_with('\'')) || (s.starts_with('"') && s.ends_with('"')) {
        if s.len() >= 2 {
            &s[1..s.len() - 1]
        } else {
            ""
        }
    } else {
        s
    };
    inner.to_lowercase()
}

/// `StringEvaluator.exact_match`: both sides cleaned.
pub fn exact_match(reference: &str, pred: &str) -> bool {
    clean_answer(pred) == clean_answer(reference)
}

/// Why a string check cannot be decided.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum StringError {
    /// A one-character `must_include` item is matched against word tokens, and no tokenizer was
    /// given; `why` is the environment's reason it has none (empty when it has one).
    #[error("must_include [{reference:?}] is matched against word tokens, which needs NLTK's punkt model: {why}")]
    NeedsTokenizer { reference: String, why: String },
}

/// `StringEvaluator.must_include`; `Err` when the token rule applies and no tokenizer is available.
pub fn must_include(
    reference: &str,
    pred: &str,
    tokenize: bool,
    tokenizer: Option<&WordTokenizer>,
) -> Result<bool, StringError> {
    let r = clean_answer(reference);
    let p = clean_answer(pred);
    if !(tokenize && r.chars().count() == 1) {
        return Ok(p.contains(&r));
    }
    let Some(tok) = tokenizer else {
        // A token equal to a character that is not a quote is a substring of the text.
        let quote = matches!(r.as_str(), "'" | "\"" | "`");
        if !quote && !p.contains(&r) {
            return Ok(false);
        }
        return Err(StringError::NeedsTokenizer {
            reference: reference.to_string(),
            why: WordTokenizer::from_environment().err().map(ToString::to_string).unwrap_or_default(),
        });
    };
    if tok.tokens(&r).len() != 1 {
        return Ok(p.contains(&r));
    }
    Ok(tok.tokens(&p).contains(&r))
}

/// True when `reference` is matched against word tokens (a single one-character `must_include`), which
/// needs NLTK's punkt model.
pub fn needs_tokenizer(reference: &ReferenceAnswers) -> bool {
    matches!(&reference.must_include, Some(items) if items.len() == 1 && clean_answer(&items[0]).chars().count() == 1)
}

/// What the string evaluator needs besides the answer.
pub struct StringContext<'a> {
    pub intent: &'a str,
    pub string_note: Option<&'a str>,
    pub judge: Option<&'a dyn Judge>,
    pub tokenizer: Option<&'a WordTokenizer>,
}

/// The verdict and a one-line account of it.
pub struct StringOutcome {
    pub verdict: Verdict,
    pub detail: String,
}

/// `StringEvaluator.__call__` on `answer` (the `answer` of the final `stop`, `""` without one).
pub async fn string_match(reference: &ReferenceAnswers, answer: &str, cx: &StringContext<'_>) -> StringOutcome {
    let pred = clean_answer(answer);
    let mut score = true;
    let mut notes = Vec::new();
    let invalid = |why: String| StringOutcome { verdict: Verdict::Invalid(why.clone()), detail: why };
    if let Some(exact) = &reference.exact_match {
        let ok = exact_match(exact, &pred);
        notes.push(format!("exact_match {exact:?}: {}", pass(ok)));
        score &= ok;
    }
    if let Some(items) = &reference.must_include {
        let tokenize = items.len() == 1;
        for item in items {
            match must_include(item, &pred, tokenize, cx.tokenizer) {
                Ok(ok) => {
                    notes.push(format!("must_include {item:?}: {}", pass(ok)));
                    score &= ok;
                }
                Err(why) => return invalid(why.to_string()),
            }
        }
    }
    match &reference.fuzzy_match {
        None => {}
        Some(FuzzyMatch::Unachievable) => {
            let ok = exact_match("N/A", &pred);
            notes.push(format!("fuzzy_match \"N/A\": {}", pass(ok)));
            score &= ok;
            if !score {
                if let Some(judge) = cx.judge {
                    let Some(note) = cx.string_note else {
                        return invalid("fuzzy_match \"N/A\" needs eval.string_note for the judge".to_string());
                    };
                    match judge.ua_match(cx.intent, note, &pred).await {
                        Ok(same) => {
                            notes.push(format!("judge on the unachievable reason: {}", pass(same)));
                            score = same;
                        }
                        Err(e) => return invalid(format!("the judge failed: {e}")),
                    }
                }
            }
        }
        Some(FuzzyMatch::References(refs)) => {
            let Some(judge) = cx.judge else {
                return invalid("fuzzy_match needs an LLM judge, and none is configured".to_string());
            };
            for r in refs {
                match judge.fuzzy_match(cx.intent, r, &pred).await {
                    Ok(ok) => {
                        notes.push(format!("fuzzy_match {r:?} (judge): {}", pass(ok)));
                        score &= ok;
                    }
                    Err(e) => return invalid(format!("the judge failed: {e}")),
                }
            }
        }
    }
    StringOutcome { verdict: Verdict::from_bool(score), detail: notes.join("; ") }
}

fn pass(ok: bool) -> &'static str {
    if ok {
        "pass"
    } else {
        "fail"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clean_answer_strips_space_one_quote_pair_and_case() {
        assert_eq!(clean_answer("  'Ann  Lee' \n"), "ann  lee");
        assert_eq!(clean_answer("\"'x'\""), "'x'");
        assert_eq!(clean_answer("'"), "");
        assert_eq!(clean_answer("\u{a0}A\u{1f}"), "a");
    }

    #[test]
    fn exact_match_cleans_the_answer_twice_in_all() {
        // Cleaned once on arrival, once in the comparison: two quote pairs go.
        let pred = clean_answer("\"'12'\"");
        assert!(exact_match("12", &pred));
        assert!(!exact_match("12", &clean_answer("\"\"'12'\"\"")));
    }

    #[test]
    fn must_include_is_a_substring_without_or_split() {
        assert_eq!(must_include("Bar |OR| baz", "foo bar |or| baz", false, None), Ok(true));
        assert_eq!(must_include("bar |OR| baz", "baz", false, None), Ok(false));
        // One character, no tokenizer: absent is decidable, present is not.
        assert_eq!(must_include("7", "none", true, None), Ok(false));
        assert!(must_include("7", "17", true, None).is_err());
    }
}
