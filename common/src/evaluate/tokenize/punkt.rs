//! NLTK's Punkt sentence splitter (`PunktSentenceTokenizer.tokenize`), as
//! `nltk.sent_tokenize` runs it with a trained model.
//!
//! The model is not shipped with skillshift (its licence is unclarified); it
//! is read from NLTK's own `punkt_tab/<language>/` files: `abbrev_types.txt`,
//! `collocations.tab`, `sent_starters.txt` and `ortho_context.tab`. The
//! algorithm follows NLTK 3.10: candidate ends (`.`, `?`, `!` followed by
//! punctuation or by whitespace and a token), a first pass on word types
//! (abbreviations, ellipses), a second pass on token pairs (collocations,
//! the orthographic heuristic for abbreviations, initials and numbers), and
//! the realignment of closing quotes and brackets onto the sentence they end.
//! Text is handled as Unicode scalar values, as Python indexes strings.

use std::collections::{HashMap, HashSet};
use std::path::Path;
use std::sync::OnceLock;

use regex::Regex;

use super::py_isspace;

// Orthographic context flags, as NLTK stores them in `ortho_context.tab`.
const ORTHO_BEG_UC: u32 = 1 << 1;
const ORTHO_MID_UC: u32 = 1 << 2;
const ORTHO_UNK_UC: u32 = 1 << 3;
const ORTHO_BEG_LC: u32 = 1 << 4;
const ORTHO_MID_LC: u32 = 1 << 5;
const ORTHO_UNK_LC: u32 = 1 << 6;
const ORTHO_UC: u32 = ORTHO_BEG_UC + ORTHO_MID_UC + ORTHO_UNK_UC;
const ORTHO_LC: u32 = ORTHO_BEG_LC + ORTHO_MID_LC + ORTHO_UNK_LC;

const SENT_END: [char; 3] = ['.', '?', '!'];
/// Characters that cannot appear within words (NLTK's `_re_non_word_chars`, English).
const NON_WORD: &[char] = &[
    ')', '"', ';', '}', ']', '*', ':', '@', '\'', '(', '{', '[', '\u{2018}', '\u{2019}', '\u{201c}', '\u{201d}',
    '\u{ab}', '\u{bb}', '?', '!',
];
/// Characters that cannot start a word token (NLTK's `_re_word_start`, negated).
const NOT_WORD_START: &[char] = &['(', '"', '`', '{', '[', ':', ';', '&', '#', '*', '@', ')', '}', ']', '-', ','];
/// Closing punctuation that realigns onto the previous sentence.
const CLOSERS: &[char] =
    &['"', '\'', ')', ']', '}', '\u{2018}', '\u{2019}', '\u{201c}', '\u{201d}', '\u{ab}', '\u{bb}'];
/// `PunktSentenceTokenizer.PUNCTUATION`.
const PUNCTUATION: [&str; 6] = [";", ":", ",", ".", "!", "?"];
/// Python's `string.whitespace`.
const ASCII_WHITESPACE: [char; 6] = [' ', '\t', '\n', '\r', '\x0b', '\x0c'];

/// Why a Punkt model could not be read.
#[derive(Debug, thiserror::Error)]
pub enum ModelError {
    #[error("cannot read the punkt model file {path}: {source}")]
    Io { path: String, source: std::io::Error },
    #[error("{path}: line {line}: {message}")]
    Format { path: String, line: usize, message: String },
}

/// A trained Punkt model (NLTK's `PunktParameters`).
#[derive(Debug, Clone, Default)]
pub struct PunktModel {
    abbrev_types: HashSet<String>,
    collocations: HashSet<(String, String)>,
    sent_starters: HashSet<String>,
    ortho_context: HashMap<String, u32>,
}

/// Python's `rm_nl`: a line without its line end.
fn lines(text: &str) -> impl Iterator<Item = (usize, &str)> {
    text.split_inclusive('\n').map(|l| l.strip_suffix('\n').unwrap_or(l)).enumerate().map(|(i, l)| (i + 1, l))
}

impl PunktModel {
    /// Reads a model from a `punkt_tab/<language>/` directory.
    pub fn load(dir: &Path) -> Result<Self, ModelError> {
        let read = |name: &str| {
            let path = dir.join(name);
            std::fs::read_to_string(&path).map_err(|source| ModelError::Io { path: path.display().to_string(), source })
        };
        Self::from_files(
            &read("abbrev_types.txt")?,
            &read("collocations.tab")?,
            &read("sent_starters.txt")?,
            &read("ortho_context.tab")?,
        )
        .map_err(|(name, line, message)| ModelError::Format {
            path: dir.join(name).display().to_string(),
            line,
            message,
        })
    }

    /// Builds a model from the text of its four files.
    pub fn from_files(
        abbrev_types: &str,
        collocations: &str,
        sent_starters: &str,
        ortho_context: &str,
    ) -> Result<Self, (&'static str, usize, String)> {
        let mut model = PunktModel {
            abbrev_types: lines(abbrev_types).map(|(_, l)| l.to_string()).collect(),
            sent_starters: lines(sent_starters).map(|(_, l)| l.to_string()).collect(),
            ..PunktModel::default()
        };
        for (n, line) in lines(collocations) {
            let mut parts = line.split('\t');
            match (parts.next(), parts.next(), parts.next()) {
                (Some(a), Some(b), None) => {
                    model.collocations.insert((a.to_string(), b.to_string()));
                }
                _ => return Err(("collocations.tab", n, "expected two tab-separated words".to_string())),
            }
        }
        for (n, line) in lines(ortho_context) {
            let (word, flags) = line.split_once('\t').ok_or((
                "ortho_context.tab",
                n,
                "expected a word, a tab and a number".to_string(),
            ))?;
            let flags: u32 =
                flags.trim().parse().map_err(|_| ("ortho_context.tab", n, format!("'{flags}' is not a number")))?;
            model.ortho_context.insert(word.to_string(), flags);
        }
        Ok(model)
    }

    /// The sentences of `text`, as `nltk.sent_tokenize(text)` returns them.
    pub fn sentences(&self, text: &str) -> Vec<String> {
        let chars: Vec<char> = text.chars().collect();
        let slices = self.realign(&chars, self.slices(&chars));
        slices.into_iter().map(|(s, e)| chars[s..e].iter().collect()).collect()
    }

    fn ortho(&self, typ: &str) -> u32 {
        self.ortho_context.get(typ).copied().unwrap_or(0)
    }

    /// `_slices_from_text`: (start, end) in chars.
    fn slices(&self, text: &[char]) -> Vec<(usize, usize)> {
        let mut out = Vec::new();
        let mut last_break = 0;
        for (m, context) in end_contexts(text) {
            if self.contains_sentbreak(&context) {
                out.push((last_break, m.end()));
                last_break = m.next_tok.unwrap_or(m.end());
            }
        }
        let trimmed = text.len() - text.iter().rev().take_while(|c| py_isspace(**c)).count();
        out.push((last_break, trimmed));
        out
    }

    /// `_realign_boundaries`.
    fn realign(&self, text: &[char], slices: Vec<(usize, usize)>) -> Vec<(usize, usize)> {
        let mut out = Vec::new();
        let mut realign = 0;
        for i in 0..slices.len() {
            let s1 = (slices[i].0 + realign, slices[i].1);
            let Some(&s2) = slices.get(i + 1) else {
                if s1.0 < s1.1 {
                    out.push(s1);
                }
                continue;
            };
            let second = &text[s2.0.min(s2.1)..s2.1];
            match boundary_realignment(second) {
                Some((kept, end)) => {
                    out.push((s1.0, s2.0 + kept));
                    realign = end;
                }
                None => {
                    realign = 0;
                    if s1.0 < s1.1 {
                        out.push(s1);
                    }
                }
            }
        }
        out
    }

    /// `text_contains_sentbreak`: a sentence break on any token but the last.
    fn contains_sentbreak(&self, context: &str) -> bool {
        let mut tokens = tokenize_words(context);
        for t in tokens.iter_mut() {
            self.first_pass(t);
        }
        for i in 0..tokens.len() {
            if i + 1 < tokens.len() {
                let (head, tail) = tokens.split_at_mut(i + 1);
                self.second_pass(&mut head[i], &tail[0]);
            }
            if tokens[i].sentbreak && i + 1 < tokens.len() {
                return true;
            }
        }
        false
    }

    fn first_pass(&self, t: &mut Token) {
        if t.tok.len() == 1 && SENT_END.contains(&t.tok[0]) {
            t.sentbreak = true;
        } else if t.is_ellipsis() {
            t.ellipsis = true;
        } else if t.period_final() && !t.text().ends_with("..") {
            let stem: String = t.tok[..t.tok.len() - 1].iter().collect::<String>().to_lowercase();
            let last = stem.rsplit('-').next().unwrap_or("");
            if self.abbrev_types.contains(&stem) || self.abbrev_types.contains(last) {
                t.abbr = true;
            } else {
                t.sentbreak = true;
            }
        }
    }

    fn second_pass(&self, t1: &mut Token, t2: &Token) {
        if !t1.period_final() {
            return;
        }
        let typ = t1.type_no_period();
        let next_typ = t2.type_no_sentperiod();
        let initial = t1.is_initial();
        if self.collocations.contains(&(typ.clone(), next_typ.clone())) {
            t1.sentbreak = false;
            t1.abbr = true;
            return;
        }
        if (t1.abbr || t1.ellipsis) && !initial {
            let starter = self.ortho_heuristic(t2);
            if starter == Some(true) {
                t1.sentbreak = true;
                return;
            }
            if t2.first_upper() && self.sent_starters.contains(&next_typ) {
                t1.sentbreak = true;
                return;
            }
        }
        if initial || typ == "##number##" {
            let starter = self.ortho_heuristic(t2);
            if starter == Some(false) {
                t1.sentbreak = false;
                t1.abbr = true;
                return;
            }
            if starter.is_none() && initial && t2.first_upper() && self.ortho(&next_typ) & ORTHO_LC == 0 {
                t1.sentbreak = false;
                t1.abbr = true;
            }
        }
    }

    /// `_ortho_heuristic`: is `t` the first token of a sentence (None: unknown)?
    fn ortho_heuristic(&self, t: &Token) -> Option<bool> {
        if PUNCTUATION.contains(&t.text().as_str()) {
            return Some(false);
        }
        let ctx = self.ortho(&t.type_no_sentperiod());
        if t.first_upper() && ctx & ORTHO_LC != 0 && ctx & ORTHO_MID_UC == 0 {
            return Some(true);
        }
        if t.first_lower() && (ctx & ORTHO_UC != 0 || ctx & ORTHO_BEG_LC == 0) {
            return Some(false);
        }
        None
    }
}

/// A token with Punkt's annotations (NLTK's `PunktToken`).
#[derive(Debug, Clone)]
struct Token {
    tok: Vec<char>,
    typ: String,
    sentbreak: bool,
    abbr: bool,
    ellipsis: bool,
}

fn regexes() -> &'static [Regex; 2] {
    static RE: OnceLock<[Regex; 2]> = OnceLock::new();
    RE.get_or_init(|| {
        let re = |p: &str| Regex::new(p).unwrap_or_else(|e| unreachable!("fixed pattern {p}: {e}"));
        [re(r"^-?[.,]?\d[\d,.\-]*\.?$"), re(r"^[^\W\d]\.$")]
    })
}

impl Token {
    fn new(tok: Vec<char>) -> Self {
        let lower = tok.iter().collect::<String>().to_lowercase();
        let typ = if regexes()[0].is_match(&lower) { "##number##".to_string() } else { lower };
        Token { tok, typ, sentbreak: false, abbr: false, ellipsis: false }
    }

    fn text(&self) -> String {
        self.tok.iter().collect()
    }

    fn period_final(&self) -> bool {
        self.tok.last() == Some(&'.')
    }

    fn type_no_period(&self) -> String {
        match self.typ.strip_suffix('.') {
            Some(stem) if self.typ.chars().count() > 1 => stem.to_string(),
            _ => self.typ.clone(),
        }
    }

    fn type_no_sentperiod(&self) -> String {
        if self.sentbreak {
            self.type_no_period()
        } else {
            self.typ.clone()
        }
    }

    fn first_upper(&self) -> bool {
        self.tok.first().is_some_and(|c| c.is_uppercase())
    }

    fn first_lower(&self) -> bool {
        self.tok.first().is_some_and(|c| c.is_lowercase())
    }

    fn is_ellipsis(&self) -> bool {
        self.tok.len() >= 2 && self.tok.iter().all(|c| *c == '.')
    }

    fn is_initial(&self) -> bool {
        regexes()[1].is_match(&self.text())
    }
}

/// A candidate sentence end: the end character at `at`, what follows it.
#[derive(Debug, Clone)]
struct EndMatch {
    at: usize,
    /// The text of the lookahead group `after_tok`.
    after_tok: String,
    /// Where `next_tok` starts, when the end is followed by whitespace and a token.
    next_tok: Option<usize>,
}

impl EndMatch {
    fn end(&self) -> usize {
        self.at + 1
    }
}

/// The matches of NLTK's `period_context_re` (each is one end character).
fn end_matches(text: &[char]) -> Vec<EndMatch> {
    let mut out = Vec::new();
    for (at, c) in text.iter().enumerate() {
        if !SENT_END.contains(c) {
            continue;
        }
        let Some(&after) = text.get(at + 1) else { continue };
        if NON_WORD.contains(&after) {
            out.push(EndMatch { at, after_tok: after.to_string(), next_tok: None });
            continue;
        }
        if !py_isspace(after) {
            continue;
        }
        let ws_end = (at + 1..text.len()).find(|&i| !py_isspace(text[i])).unwrap_or(text.len());
        if ws_end == text.len() {
            continue;
        }
        let tok_end = (ws_end..text.len()).find(|&i| py_isspace(text[i])).unwrap_or(text.len());
        out.push(EndMatch { at, after_tok: text[at + 1..tok_end].iter().collect(), next_tok: Some(ws_end) });
    }
    out
}

/// `_match_potential_end_contexts`: each candidate with the word before it and the token after.
fn end_contexts(text: &[char]) -> Vec<(EndMatch, String)> {
    let mut out = Vec::new();
    let mut previous_slice = (0usize, 0usize);
    let mut previous: Option<EndMatch> = None;
    let context = |slice: (usize, usize), m: &EndMatch| {
        let mut s: String = text[slice.0..slice.1].iter().collect();
        s.push(text[m.at]);
        s.push_str(&m.after_tok);
        s
    };
    for m in end_matches(text) {
        let before = &text[previous_slice.1..m.at];
        let last_ws = (0..before.len()).rev().find(|&i| ASCII_WHITESPACE.contains(&before[i])).unwrap_or(0);
        let start = if last_ws != 0 { last_ws + previous_slice.1 + 1 } else { previous_slice.0 };
        let word = (start, m.at);
        if let Some(p) = previous.take() {
            if previous_slice.1 <= word.0 {
                out.push((p.clone(), context(previous_slice, &p)));
            }
        }
        previous = Some(m);
        previous_slice = word;
    }
    if let Some(p) = previous {
        out.push((p.clone(), context(previous_slice, &p)));
    }
    out
}

/// `re_boundary_realignment.match`: (closers kept, match end) when `text` starts with closing punctuation.
fn boundary_realignment(text: &[char]) -> Option<(usize, usize)> {
    for k in 1..=text.len() {
        if !CLOSERS.contains(&text[k - 1]) {
            return None;
        }
        if k == text.len() || text[k] == '\n' {
            let ws = text[k..].iter().take_while(|c| py_isspace(**c)).count();
            return Some((k, k + ws));
        }
        if py_isspace(text[k]) {
            let ws = text[k..].iter().take_while(|c| py_isspace(**c)).count();
            return Some((k, k + ws));
        }
        if text[k] == '-' && text.get(k + 1) == Some(&'-') {
            return Some((k, k));
        }
    }
    None
}

/// `_tokenize_words`: Punkt's own word split, line by line.
fn tokenize_words(text: &str) -> Vec<Token> {
    let mut out = Vec::new();
    for line in text.split('\n') {
        if line.chars().all(py_isspace) {
            continue;
        }
        let chars: Vec<char> = line.chars().collect();
        out.extend(punkt_words(&chars).into_iter().map(Token::new));
    }
    out
}

/// `_re_multi_char_punct` at `i`: `-{2,}`, `\.{2,}` or `(?:\.\s){2,}\.`; returns the match length.
fn multi_char(text: &[char], i: usize) -> Option<usize> {
    let run = |c: char| text[i..].iter().take_while(|x| **x == c).count();
    if text.get(i) == Some(&'-') && run('-') >= 2 {
        return Some(run('-'));
    }
    if text.get(i) == Some(&'.') && run('.') >= 2 {
        return Some(run('.'));
    }
    let mut reps = 0;
    while text.get(i + 2 * reps) == Some(&'.') && text.get(i + 2 * reps + 1).is_some_and(|c| py_isspace(*c)) {
        reps += 1;
    }
    // After the greedy repetitions a '.' must follow; giving one back always leaves a '.' next.
    if reps >= 2 && text.get(i + 2 * reps) == Some(&'.') {
        return Some(2 * reps + 1);
    }
    if reps >= 3 {
        return Some(2 * (reps - 1) + 1);
    }
    None
}

/// Does a word end before position `j` (the lookahead of the word alternative)?
fn word_ends_at(text: &[char], j: usize) -> bool {
    let non_word_or_multi =
        |k: usize| text.get(k).is_some_and(|c| NON_WORD.contains(c)) || multi_char(text, k).is_some();
    match text.get(j) {
        None => true,
        Some(c) if py_isspace(*c) => true,
        Some(_) if non_word_or_multi(j) => true,
        Some(',') => match text.get(j + 1) {
            None => true,
            Some(c) if py_isspace(*c) => true,
            Some(_) => non_word_or_multi(j + 1),
        },
        Some(_) => false,
    }
}

/// `PunktLanguageVars.word_tokenize`: the `findall` of NLTK's word regex over one line.
fn punkt_words(text: &[char]) -> Vec<Vec<char>> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < text.len() {
        if let Some(n) = multi_char(text, i) {
            out.push(text[i..i + n].to_vec());
            i += n;
            continue;
        }
        let c = text[i];
        if py_isspace(c) {
            i += 1;
            continue;
        }
        if !NOT_WORD_START.contains(&c) {
            // The lazy `\S+?` stops at the first position where a word may end.
            let mut j = i + 1;
            while j < text.len() && !py_isspace(text[j]) && !word_ends_at(text, j) {
                j += 1;
            }
            if word_ends_at(text, j) {
                out.push(text[i..j].to_vec());
                i = j;
                continue;
            }
        }
        out.push(vec![c]);
        i += 1;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(s: &str) -> Vec<String> {
        punkt_words(&s.chars().collect::<Vec<_>>()).into_iter().map(|w| w.into_iter().collect()).collect()
    }

    #[test]
    fn punkt_word_split_keeps_periods_and_splits_punctuation() {
        assert_eq!(words("there is 1. it is (open)!"), ["there", "is", "1.", "it", "is", "(", "open", ")", "!"]);
        assert_eq!(words("a, b,c ... --x"), ["a", ",", "b,c", "...", "--", "x"]);
    }

    #[test]
    fn end_contexts_pair_the_word_before_with_the_token_after() {
        let text: Vec<char> = "Very bad acting!!! I promise.".chars().collect();
        let got: Vec<String> = end_contexts(&text).into_iter().map(|(_, c)| c).collect();
        assert_eq!(got, ["acting!!! I"]);
    }

    #[test]
    fn without_model_knowledge_every_period_before_a_capital_breaks() {
        let model = PunktModel::default();
        assert_eq!(model.sentences("One. Two three.  Four"), ["One.", "Two three.", "Four"]);
        assert_eq!(model.sentences("(One.) Two."), ["(One.)", "Two."]);
    }
}
