//! A `program_html` check's `url` and `locator`, classified as WebArena's
//! `HTMLContentEvaluator` classifies them: `last`, a URL or a `func:` helper;
//! the page's source, a `document.` expression or a helper. Loading a task
//! refuses what does not classify ([`super::validate`]); the evaluator
//! (`evaluate::program`) reads a page by the same classes.

use crate::text::py_isspace;

/// A WebArena helper named by a `func:` URL or locator.
#[derive(Debug, Clone, PartialEq, Eq)]
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
pub fn parse_helper(call: &str) -> Result<Helper, String> {
    let call = call.trim();
    let (name, rest) = call.split_once('(').ok_or_else(|| format!("'{call}' is not a helper call"))?;
    let inner = rest.trim_end().strip_suffix(')').ok_or_else(|| format!("'{call}' does not end with ')'"))?;
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
                        None => return Err(format!("unterminated string in '{call}'")),
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
                    other => return Err(format!("argument '{other}' of '{call}' is neither a string nor the page")),
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
            Some(c) => return Err(format!("unexpected '{c}' in '{call}'")),
        }
    }
    let one_str = |args: &[Arg]| match args {
        [Arg::Str(s)] => Ok(s.clone()),
        _ => Err(format!("'{call}' takes one string")),
    };
    match name.trim() {
        "reddit_get_post_url" => one_str(&args).map(Helper::RedditPostUrl),
        "shopping_get_latest_order_url" if args.is_empty() => Ok(Helper::ShoppingLatestOrderUrl),
        "shopping_get_sku_latest_review_author" => one_str(&args).map(Helper::ShoppingReviewAuthor),
        "shopping_get_sku_latest_review_rating" => one_str(&args).map(Helper::ShoppingReviewRating),
        "gitlab_get_project_memeber_role" => match args.as_slice() {
            [Arg::Page, Arg::Str(s)] => Ok(Helper::GitlabMemberRole(s.clone())),
            _ => Err(format!("'{call}' takes the page and an account name")),
        },
        other => Err(format!("unknown helper '{other}' (WebArena defines reddit_get_post_url, shopping_get_latest_order_url, shopping_get_sku_latest_review_author, shopping_get_sku_latest_review_rating, gitlab_get_project_memeber_role)")),
    }
}

/// Python's `s.split("func:")[1]`.
fn after_func(s: &str) -> Option<&str> {
    let rest = s.split_once("func:")?.1;
    Some(rest.split("func:").next().unwrap_or(rest))
}

/// Where a check reads.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CheckUrl {
    /// `last`: the agent's final page.
    Last,
    /// A URL (placeholders already resolved).
    Url(String),
    /// `func:`: a helper computes the URL.
    Helper(Helper),
}

/// What a check reads.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Locator {
    /// Empty: the page's HTML source.
    Content,
    /// A `document.` / `[...document.` expression evaluated in the page.
    Script(String),
    /// `func:`: a helper computes the text.
    Helper(Helper),
}

/// Classifies a check's `url` as WebArena does.
pub fn check_url(url: &str) -> Result<CheckUrl, String> {
    if url.starts_with("func") {
        let call = after_func(url).ok_or_else(|| format!("url '{url}' starts with 'func' but has no 'func:'"))?;
        return parse_helper(call).map(CheckUrl::Helper);
    }
    if url == "last" {
        return Ok(CheckUrl::Last);
    }
    Ok(CheckUrl::Url(url.to_string()))
}

/// Classifies a check's `locator` as WebArena does.
pub fn locator(locator: &str) -> Result<Locator, String> {
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
    Err(format!("unknown locator '{locator}' (WebArena knows '', document.…, [...document.… and func:…)"))
}
