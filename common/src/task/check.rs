//! A `program_html` check's `url` and `locator`, classified as WebArena's
//! `HTMLContentEvaluator` classifies them: `last`, a URL or a `func:` helper;
//! the page's source, a `document.` expression or a helper.
//!
//! A task holds each as a [`Classified`]: the text as the task file spells
//! it (written back byte for byte) beside its class or why it has none,
//! found once when the task is read. Loading refuses what does not classify
//! ([`super::validate`], `evaluate::check_eval`), reading the stored result;
//! the evaluator (`evaluate::program`) reads a page by the same stored class.

use std::fmt;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::text::py_isspace;

/// Why a check's `url` or `locator` does not classify; the text names what was found.
#[derive(Debug, Clone, PartialEq, Eq, Hash, thiserror::Error)]
pub enum CheckError {
    #[error("'{call}' is not a helper call")]
    NotACall { call: String },
    #[error("'{call}' does not end with ')'")]
    Unclosed { call: String },
    #[error("unterminated string in '{call}'")]
    UnterminatedString { call: String },
    #[error("argument '{argument}' of '{call}' is neither a string nor the page")]
    Argument { argument: String, call: String },
    #[error("unexpected '{found}' in '{call}'")]
    Unexpected { found: char, call: String },
    #[error("'{call}' takes one string")]
    OneString { call: String },
    #[error("'{call}' takes the page and an account name")]
    PageAndAccount { call: String },
    #[error(
        "unknown helper '{name}' (WebArena defines reddit_get_post_url, shopping_get_latest_order_url, \
         shopping_get_sku_latest_review_author, shopping_get_sku_latest_review_rating, gitlab_get_project_memeber_role)"
    )]
    UnknownHelper { name: String },
    #[error("url '{url}' starts with 'func' but has no 'func:'")]
    NoFunc { url: String },
    #[error("unknown locator '{locator}' (WebArena knows '', document.…, [...document.… and func:…)")]
    UnknownLocator { locator: String },
}

/// A WebArena helper named by a `func:` URL or locator.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Helper {
    /// `reddit_get_post_url(url)`: the post's URL, from a post or comment URL.
    RedditPostUrl(String),
    /// `shopping_get_latest_order_url()`.
    ShoppingLatestOrderUrl,
    /// `shopping_get_sku_latest_review_author(sku)`.
    ShoppingReviewAuthor(String),
    /// `shopping_get_sku_latest_review_rating(sku)`.
    ShoppingReviewRating(String),
    /// `gitlab_get_project_memeber_role(page, account)`: the account's role on the members page.
    GitlabMemberRole(String),
}

enum Arg {
    Str(String),
    Page,
}

/// Parses `name(arg, ...)`, the Python call a `func:` holds (string literals and `__page__`/`page`).
pub fn parse_helper(call: &str) -> Result<Helper, CheckError> {
    let call = call.trim();
    let (name, rest) = call.split_once('(').ok_or_else(|| CheckError::NotACall { call: call.to_string() })?;
    let inner = rest.trim_end().strip_suffix(')').ok_or_else(|| CheckError::Unclosed { call: call.to_string() })?;
    let mut args = Vec::new();
    let mut chars = inner.chars().peekable();
    loop {
        while chars.peek().is_some_and(|c| c.is_whitespace()) {
            chars.next();
        }
        match chars.peek().copied() {
            None => break,
            Some(q @ ('\'' | '"')) => {
                chars.next();
                let mut s = String::new();
                loop {
                    match chars.next() {
                        None => return Err(CheckError::UnterminatedString { call: call.to_string() }),
                        Some('\\') => s.extend(chars.next()),
                        Some(c) if c == q => break,
                        Some(c) => s.push(c),
                    }
                }
                args.push(Arg::Str(s));
            }
            Some(_) => {
                let word: String = chars.by_ref().take_while(|c| *c != ',').collect();
                match word.trim() {
                    "__page__" | "page" => args.push(Arg::Page),
                    other => return Err(CheckError::Argument { argument: other.to_string(), call: call.to_string() }),
                }
                continue;
            }
        }
        while chars.peek().is_some_and(|c| c.is_whitespace()) {
            chars.next();
        }
        match chars.next() {
            None => break,
            Some(',') => {}
            Some(found) => return Err(CheckError::Unexpected { found, call: call.to_string() }),
        }
    }
    let one_str = |args: &[Arg]| match args {
        [Arg::Str(s)] => Ok(s.clone()),
        _ => Err(CheckError::OneString { call: call.to_string() }),
    };
    match name.trim() {
        "reddit_get_post_url" => one_str(&args).map(Helper::RedditPostUrl),
        "shopping_get_latest_order_url" if args.is_empty() => Ok(Helper::ShoppingLatestOrderUrl),
        "shopping_get_sku_latest_review_author" => one_str(&args).map(Helper::ShoppingReviewAuthor),
        "shopping_get_sku_latest_review_rating" => one_str(&args).map(Helper::ShoppingReviewRating),
        "gitlab_get_project_memeber_role" => match args.as_slice() {
            [Arg::Page, Arg::Str(s)] => Ok(Helper::GitlabMemberRole(s.clone())),
            _ => Err(CheckError::PageAndAccount { call: call.to_string() }),
        },
        other => Err(CheckError::UnknownHelper { name: other.to_string() }),
    }
}

/// Python's `s.split("func:")[1]`.
fn after_func(s: &str) -> Option<&str> {
    let rest = s.split_once("func:")?.1;
    Some(rest.split("func:").next().unwrap_or(rest))
}

/// Where a check reads.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum CheckUrl {
    /// `last`: the agent's final page.
    Last,
    /// A URL (placeholders already resolved).
    Url(String),
    /// `func:`: a helper computes the URL.
    Helper(Helper),
}

/// What a check reads.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Locator {
    /// Empty: the page's HTML source.
    Content,
    /// A `document.` / `[...document.` expression evaluated in the page.
    Script(String),
    /// `func:`: a helper computes the text.
    Helper(Helper),
}

/// Classifies a check's `url` as WebArena does.
pub fn check_url(url: &str) -> Result<CheckUrl, CheckError> {
    if url.starts_with("func") {
        let call = after_func(url).ok_or_else(|| CheckError::NoFunc { url: url.to_string() })?;
        return parse_helper(call).map(CheckUrl::Helper);
    }
    if url == "last" {
        return Ok(CheckUrl::Last);
    }
    Ok(CheckUrl::Url(url.to_string()))
}

/// Classifies a check's `locator` as WebArena does.
pub fn locator(locator: &str) -> Result<Locator, CheckError> {
    if locator.trim_matches(py_isspace).is_empty() {
        return Ok(Locator::Content);
    }
    if locator.starts_with("document.") || locator.starts_with("[...document.") {
        return Ok(Locator::Script(locator.to_string()));
    }
    if locator.starts_with("func:") {
        let call = after_func(locator).unwrap_or("");
        return parse_helper(call).map(Locator::Helper);
    }
    Err(CheckError::UnknownLocator { locator: locator.to_string() })
}

/// What a check's text classifies into: [`CheckUrl`] for `url`, [`Locator`] for `locator`.
pub trait Classify: Sized {
    /// The class of `text`, or why it has none.
    fn classify(text: &str) -> Result<Self, CheckError>;
}

impl Classify for CheckUrl {
    fn classify(text: &str) -> Result<Self, CheckError> {
        check_url(text)
    }
}

impl Classify for Locator {
    fn classify(text: &str) -> Result<Self, CheckError> {
        locator(text)
    }
}

/// A check's `url` or `locator`: the text as read, and its class, found once
/// when the value is made. It reads and writes as the bare JSON string, so a
/// task written back is byte-identical; a text that does not classify still
/// loads, keeping its error for the validators to report and a run to score
/// as invalid. It shows (`Debug`, `Display`) as its text, as the `String` it
/// once was; the class follows from the text.
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct Classified<T> {
    text: String,
    class: Result<T, CheckError>,
}

impl<T: Classify> Classified<T> {
    /// Classifies `text`.
    pub fn new(text: impl Into<String>) -> Self {
        let text = text.into();
        let class = T::classify(&text);
        Classified { text, class }
    }
}

impl<T> Classified<T> {
    /// The text as the task file spells it.
    pub fn as_str(&self) -> &str {
        &self.text
    }

    /// The class, or why the text has none.
    pub fn class(&self) -> Result<&T, &CheckError> {
        self.class.as_ref()
    }
}

impl<T: Classify> Default for Classified<T> {
    fn default() -> Self {
        Classified::new(String::new())
    }
}

impl<T: Classify> From<String> for Classified<T> {
    fn from(text: String) -> Self {
        Classified::new(text)
    }
}

impl<T: Classify> From<&str> for Classified<T> {
    fn from(text: &str) -> Self {
        Classified::new(text)
    }
}

impl<T> fmt::Display for Classified<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

impl<T> fmt::Debug for Classified<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&self.text, f)
    }
}

impl<T> PartialEq<str> for Classified<T> {
    fn eq(&self, other: &str) -> bool {
        self.text == other
    }
}

impl<T> PartialEq<&str> for Classified<T> {
    fn eq(&self, other: &&str) -> bool {
        self.text == *other
    }
}

impl<T> Serialize for Classified<T> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.text)
    }
}

impl<'de, T: Classify> Deserialize<'de> for Classified<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        String::deserialize(d).map(Classified::new)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Serialize, Deserialize)]
    struct Both {
        url: Classified<CheckUrl>,
        locator: Classified<Locator>,
    }

    #[test]
    fn a_check_reads_and_writes_as_its_text_and_keeps_its_class() {
        let json = r#"{"url":"func:reddit_get_post_url('__last_url__')","locator":"window.x"}"#;
        let both: Both = serde_json::from_str(json).unwrap();
        assert_eq!(both.url.class(), Ok(&CheckUrl::Helper(Helper::RedditPostUrl("__last_url__".into()))));
        assert_eq!(both.locator.class(), Err(&CheckError::UnknownLocator { locator: "window.x".into() }));
        assert_eq!(serde_json::to_string(&both).unwrap(), json);
        assert!(both.url == "func:reddit_get_post_url('__last_url__')");
        assert_eq!(both.locator.to_string(), "window.x");
        assert_eq!(format!("{:?}", both.locator), format!("{:?}", "window.x"));
        assert_eq!(Classified::<Locator>::default().class(), Ok(&Locator::Content));
        let e = serde_json::from_str::<Both>(r#"{"url":1,"locator":""}"#).err().map(|e| e.to_string());
        assert_eq!(e.as_deref(), Some("invalid type: integer `1`, expected a string at line 1 column 8"));
    }

    #[test]
    fn errors_read_as_they_always_have() {
        let shown = |r: Result<Helper, CheckError>| r.err().map(|e| e.to_string()).unwrap_or_default();
        assert_eq!(shown(parse_helper("x")), "'x' is not a helper call");
        assert_eq!(shown(parse_helper("f('a'")), "'f('a'' does not end with ')'");
        assert_eq!(shown(parse_helper("f('a)")), "unterminated string in 'f('a)'");
        assert_eq!(shown(parse_helper("f(x)")), "argument 'x' of 'f(x)' is neither a string nor the page");
        assert_eq!(shown(parse_helper("f('a' 'b')")), "unexpected ''' in 'f('a' 'b')'");
        assert_eq!(shown(parse_helper("reddit_get_post_url()")), "'reddit_get_post_url()' takes one string");
        assert_eq!(
            shown(parse_helper("gitlab_get_project_memeber_role('a')")),
            "'gitlab_get_project_memeber_role('a')' takes the page and an account name"
        );
        assert_eq!(
            shown(parse_helper("os.system('x')")),
            "unknown helper 'os.system' (WebArena defines reddit_get_post_url, shopping_get_latest_order_url, \
             shopping_get_sku_latest_review_author, shopping_get_sku_latest_review_rating, gitlab_get_project_memeber_role)"
        );
        assert_eq!(
            check_url("funcall").err().map(|e| e.to_string()).unwrap_or_default(),
            "url 'funcall' starts with 'func' but has no 'func:'"
        );
        assert_eq!(
            locator("window.x").err().map(|e| e.to_string()).unwrap_or_default(),
            "unknown locator 'window.x' (WebArena knows '', document.…, [...document.… and func:…)"
        );
    }
}
