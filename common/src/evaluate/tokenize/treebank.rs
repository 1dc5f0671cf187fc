//! NLTK's improved Treebank word tokenizer (`NLTKWordTokenizer.tokenize`,
//! NLTK 3.10), applied by `word_tokenize` to each Punkt sentence: a fixed
//! sequence of regular-expression substitutions, then a split on whitespace.
//! Only the period at the very end of a sentence is split off, which is why
//! the sentence splitter matters.

use std::sync::OnceLock;

use regex::Regex;

struct Rule {
    re: Regex,
    with: &'static str,
}

struct Rules {
    starting_quotes: Vec<Rule>,
    punctuation: Vec<Rule>,
    parens: Rule,
    double_dashes: Rule,
    ending_quotes: Vec<Rule>,
    contractions: Vec<Rule>,
}

fn rule(pattern: &str, with: &'static str) -> Rule {
    let re = Regex::new(pattern).unwrap_or_else(|e| unreachable!("fixed pattern {pattern}: {e}"));
    Rule { re, with }
}

fn rules() -> &'static Rules {
    static RULES: OnceLock<Rules> = OnceLock::new();
    RULES.get_or_init(|| Rules {
        // The fifth starting-quote rule needs look-around and is `split_opening_quote`.
        starting_quotes: vec![
            rule("([«“‘„]|[`]+)", " ${1} "),
            rule(r#"^""#, "``"),
            rule("(``)", " ${1} "),
            rule(r#"([ (\[{<])("|'{2})"#, "${1} `` "),
        ],
        punctuation: vec![
            rule(r#"([^.])(\.)([\])}>"'»”’ ]*)\s*$"#, "${1} ${2} ${3} "),
            rule(r"([:,])([^\d])", " ${1} ${2}"),
            rule(r"([:,])$", " ${1} "),
            rule(r"\.{2,}", " ${0} "),
            rule(r"[;@#$%&]", " ${0} "),
            rule("[\u{2012}-\u{2015}]", " ${0} "),
            rule(r#"([^.])(\.)([\])}>"']*)\s*$"#, "${1} ${2}${3} "),
            rule(r"[?!]", " ${0} "),
            rule(r"([^'])' ", "${1} ' "),
            rule(r"[*]", " ${0} "),
        ],
        parens: rule(r"[\]\[(){}<>]", " ${0} "),
        double_dashes: rule(r"--", " -- "),
        ending_quotes: vec![
            rule("([»”’])", " ${1} "),
            rule("''", " '' "),
            rule("\"", " '' "),
            rule(r"\s+", " "),
            rule(r"([^' ])('[sS]|'[mM]|'[dD]|') ", "${1} ${2} "),
            rule(r"([^' ])('ll|'LL|'re|'RE|'ve|'VE|n't|N'T) ", "${1} ${2} "),
        ],
        contractions: vec![
            rule(r"(?i)\b(can)(not)\b", " ${1} ${2} "),
            rule(r"(?i)\b(d)('ye)\b", " ${1} ${2} "),
            rule(r"(?i)\b(gim)(me)\b", " ${1} ${2} "),
            rule(r"(?i)\b(gon)(na)\b", " ${1} ${2} "),
            rule(r"(?i)\b(got)(ta)\b", " ${1} ${2} "),
            rule(r"(?i)\b(lem)(me)\b", " ${1} ${2} "),
            rule(r"(?i)\b(more)('n)\b", " ${1} ${2} "),
            // `(?=\s)` in NLTK: the whitespace is captured and put back.
            rule(r"(?i)\b(wan)(na)(\s)", " ${1} ${2} ${3}"),
            rule(r"(?i) ('t)(is)\b", " ${1} ${2} "),
            rule(r"(?i) ('t)(was)\b", " ${1} ${2} "),
        ],
    })
}

fn is_word(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

/// `(?i)(?<!\w)(\')(?!(?:re|ve|ll|m|t|s|d|n)\b)(?=\w)` -> `\1 `: an opening
/// single quote before a word is split from it, unless it starts a contraction.
fn split_opening_quote(text: &str) -> String {
    let chars: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len() + 8);
    for (i, &c) in chars.iter().enumerate() {
        out.push(c);
        if c != '\'' {
            continue;
        }
        let before_ok = i == 0 || !is_word(chars[i - 1]);
        let after_word = chars.get(i + 1).is_some_and(|c| is_word(*c));
        if !before_ok || !after_word {
            continue;
        }
        let contraction = ["re", "ve", "ll", "m", "t", "s", "d", "n"].iter().any(|k| {
            let n = k.chars().count();
            let piece: String = chars[i + 1..].iter().take(n).collect();
            piece.to_lowercase() == *k && !chars.get(i + 1 + n).is_some_and(|c| is_word(*c))
        });
        if !contraction {
            out.push(' ');
        }
    }
    out
}

fn apply(rule: &Rule, text: &str) -> String {
    rule.re.replace_all(text, rule.with).into_owned()
}

/// The tokens of one sentence.
pub fn tokenize(sentence: &str) -> Vec<String> {
    let r = rules();
    let mut text = sentence.to_string();
    for rule in &r.starting_quotes {
        text = apply(rule, &text);
    }
    text = split_opening_quote(&text);
    for rule in &r.punctuation {
        text = apply(rule, &text);
    }
    text = apply(&r.parens, &text);
    text = apply(&r.double_dashes, &text);
    text = format!(" {text} ");
    for rule in &r.ending_quotes {
        text = apply(rule, &text);
    }
    for rule in &r.contractions {
        text = apply(rule, &text);
    }
    text.split(super::py_isspace).filter(|t| !t.is_empty()).map(str::to_string).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nltk_doc_example() {
        let s = "Good muffins cost $3.88 (roughly 3,36 euros)\nin New York.  Please buy me\ntwo of them.\nThanks.";
        assert_eq!(
            tokenize(s),
            [
                "Good", "muffins", "cost", "$", "3.88", "(", "roughly", "3,36", "euros", ")", "in", "New", "York.",
                "Please", "buy", "me", "two", "of", "them.", "Thanks", "."
            ]
        );
    }

    #[test]
    fn quotes_and_contractions() {
        assert_eq!(
            tokenize("\"I can't,\" she said 'yes'."),
            ["``", "I", "ca", "n't", ",", "''", "she", "said", "'", "yes", "'", "."]
        );
        assert_eq!(tokenize("cannot wanna go"), ["can", "not", "wan", "na", "go"]);
    }
}
