//! `program_html`: WebArena's `HTMLContentEvaluator`, around a page it reads
//! through [`PageReader`].
//!
//! Per check: a `func:` URL calls its helper (with `__last_url__` the final
//! page's URL); any URL but `last` is loaded in a page of its own (WebArena
//! opens a new tab per check, so `last` always reads the agent's final
//! page). Then the locator: empty (after Python's strip) reads the page's
//! HTML source (`page.content()`); one starting with `document.` or
//! `[...document.` runs the check's `prep_actions` (the first that throws
//! ends them, silently) and is evaluated as `() => locator`, its value turned
//! into text by Python's `str` and a throw read as `""`; `func:` calls the
//! helper; anything else is refused. The text is HTML-unescaped, then
//! `exact_match` compares it cleaned once with the cleaned reference, and
//! each `must_include` item, split on ` |OR| `, needs one alternative as a
//! substring (no token rule here). The URL's and the locator's classes were
//! found once, when the task was read ([`crate::task::Classified`]).

use std::future::Future;

use serde_json::Value;

use super::judge::BoxFuture;
use super::python::{html_unescape, str_of};
use super::string::{clean_answer, exact_match};
use super::url::{urlparse, OR};
use super::Verdict;
pub use crate::task::check::{check_url, locator, parse_helper, CheckError, CheckUrl, Helper, Locator};
use crate::task::{ProgramHtml, RequiredContents};

/// Why a page could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PageError {
    /// The browser or the session is gone: scoring stops.
    #[error("the browser is gone: {0}")]
    Fatal(String),
    /// A page could not be loaded.
    #[error("cannot load the page: {0}")]
    Navigation(String),
    /// The expression threw in the page.
    #[error("the expression threw: {0}")]
    Script(String),
    /// This reader cannot do that (the fixture sites' HTTP checker runs no JavaScript).
    #[error("this page reader cannot do that: {0}")]
    Unsupported(String),
}

/// The browser side of `program_html`: what WebArena does with Playwright's `page`.
/// Its futures need not be `Send`; called on a concrete reader whose futures
/// are, [`super::evaluate`]'s future is `Send` too.
pub trait PageReader {
    /// Loads `url` in a page of its own; the reads that follow use it.
    fn open(&mut self, url: &str) -> impl Future<Output = Result<(), PageError>>;
    /// Makes the agent's final page the one read (a `last` check).
    fn use_final_page(&mut self) -> impl Future<Output = Result<(), PageError>>;
    /// `page.content()`: the serialised HTML (doctype included) of the page read.
    fn content(&mut self) -> impl Future<Output = Result<String, PageError>>;
    /// Evaluates `() => expression` in the page read; its value as JSON, `undefined` as `null`,
    /// and what JSON cannot carry as a `{"$py": text}` literal (see [`super::python`]).
    fn eval(&mut self, expression: &str) -> impl Future<Output = Result<Value, PageError>>;
}

/// Why the shopping site's REST API gave no JSON body: its implementation's own words.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct SiteApiError(pub String);

/// The shopping site's REST API, which WebArena's `shopping_*` helpers call as its admin.
pub trait SiteApi: Send + Sync {
    /// GET `path_and_query` on the shopping site (e.g. `/rest/V1/orders?...`), authenticated; the JSON body.
    fn shopping_get<'a>(&'a self, path_and_query: &'a str) -> BoxFuture<'a, Result<Value, SiteApiError>>;
    /// The shopping site's base URL (what `__SHOPPING__` stands for).
    fn shopping_base(&self) -> String;
}

/// A check's `required_contents` with nothing to compare (read from a task that was not validated).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("required_contents sets neither exact_match nor must_include")]
pub struct NoRequiredContents;

/// Why a WebArena helper gave no text: the check is then `invalid`, with this as its reason.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HelperError {
    #[error("the shopping helpers need the shopping site's REST API, and none is configured")]
    NoSiteApi,
    #[error(transparent)]
    SiteApi(#[from] SiteApiError),
    #[error("the latest order has no integer increment_id")]
    NoOrderId,
    #[error("the latest review has no nickname")]
    NoNickname,
    #[error("the first review's first rating is not named \"Rating\"")]
    RatingNotNamed,
    #[error("the reviews of {sku} are not a list: {got}")]
    ReviewsNotList { sku: String, got: Value },
    /// The page reader cannot run the helper's script (its own words).
    #[error("{0}")]
    Reader(String),
}

/// `required_contents` against the located text (already unescaped): (pass, what was expected).
pub fn contents_match(required: &RequiredContents, text: &str) -> Result<bool, NoRequiredContents> {
    if let Some(exact) = &required.exact_match {
        return Ok(exact_match(exact, text));
    }
    if let Some(items) = &required.must_include {
        let pred = clean_answer(text);
        return Ok(items.iter().all(|item| item.split(OR).any(|alt| pred.contains(&clean_answer(alt)))));
    }
    Err(NoRequiredContents)
}

/// `reddit_get_post_url`.
pub fn reddit_post_url(url: &str) -> String {
    let Ok(p) = urlparse(url) else { return url.to_string() };
    let parts: Vec<&str> = p.path.split('/').collect();
    if parts.len() < 4 || parts[1] != "f" {
        return url.to_string();
    }
    format!("{}://{}/f/{}/{}/", p.scheme, p.netloc, parts[2], parts[3])
}

/// The result of one check.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CheckOutcome {
    pub verdict: Verdict,
    /// The located text (after unescaping), or why there is none.
    pub got: String,
    pub detail: String,
}

fn invalid(why: String) -> CheckOutcome {
    CheckOutcome { verdict: Verdict::Invalid(why.clone()), got: String::new(), detail: why }
}

/// A helper's text; `Err` for a reader failure that must stop scoring.
async fn helper_text<P: PageReader>(
    helper: &Helper,
    page: &mut P,
    site_api: Option<&dyn SiteApi>,
) -> Result<Result<String, HelperError>, PageError> {
    let api = || site_api.ok_or(HelperError::NoSiteApi);
    Ok(match helper {
        Helper::RedditPostUrl(url) => Ok(reddit_post_url(url)),
        Helper::ShoppingLatestOrderUrl => match api() {
            Err(e) => Err(e),
            Ok(api) => {
                let q = "/rest/V1/orders?searchCriteria%5BsortOrders%5D%5B0%5D%5Bfield%5D=created_at&searchCriteria%5BsortOrders%5D%5B0%5D%5Bdirection%5D=DESC&searchCriteria%5BpageSize%5D=1";
                match api.shopping_get(q).await {
                    Err(e) => Err(e.into()),
                    Ok(v) => {
                        let id =
                            v["items"][0]["increment_id"].as_str().map(str::trim).and_then(|s| s.parse::<i64>().ok());
                        match id {
                            Some(id) => Ok(format!("{}/sales/order/view/order_id/{id}/", api.shopping_base())),
                            None => Err(HelperError::NoOrderId),
                        }
                    }
                }
            }
        },
        Helper::ShoppingReviewAuthor(sku) | Helper::ShoppingReviewRating(sku) => match api() {
            Err(e) => Err(e),
            Ok(api) => match api.shopping_get(&format!("/rest/V1/products/{sku}/reviews")).await {
                Err(e) => Err(e.into()),
                Ok(Value::Array(reviews)) if reviews.is_empty() => Ok(String::new()),
                Ok(Value::Array(reviews)) => {
                    let last = &reviews[reviews.len() - 1];
                    if matches!(helper, Helper::ShoppingReviewAuthor(_)) {
                        last["nickname"].as_str().map(str::to_string).ok_or(HelperError::NoNickname)
                    } else if reviews[0]["ratings"][0]["rating_name"] != "Rating" {
                        Err(HelperError::RatingNotNamed)
                    } else {
                        Ok(str_of(&last["ratings"][0]["percent"]))
                    }
                }
                Ok(other) => Err(HelperError::ReviewsNotList { sku: sku.clone(), got: other }),
            },
        },
        Helper::GitlabMemberRole(account) => {
            let needle = serde_json::Value::String(format!("@{account}")).to_string();
            let index_js = format!(
                "[...document.querySelectorAll(\"td[data-label='Account'] span.gl-avatar-labeled-sublabel\")].findIndex(e => e.outerText === {needle})"
            );
            let role = match page.eval(&index_js).await {
                Err(PageError::Fatal(e)) => return Err(PageError::Fatal(e)),
                Err(PageError::Unsupported(e)) => return Ok(Err(HelperError::Reader(e))),
                Err(_) => String::new(),
                Ok(index) => {
                    let role_js = format!("document.querySelectorAll(\"td.col-max-role span\")[{}].outerText", index);
                    match page.eval(&role_js).await {
                        Err(PageError::Fatal(e)) => return Err(PageError::Fatal(e)),
                        Err(PageError::Unsupported(e)) => return Ok(Err(HelperError::Reader(e))),
                        Err(_) => String::new(),
                        Ok(v) => str_of(&v),
                    }
                }
            };
            Ok(role)
        }
    })
}

/// Runs one check. `final_url` is the agent's final page's URL. `Err` only for a fatal reader failure.
pub async fn run_check<P: PageReader>(
    check: &ProgramHtml,
    final_url: &str,
    page: &mut P,
    site_api: Option<&dyn SiteApi>,
) -> Result<CheckOutcome, PageError> {
    let target = match check.url.class() {
        Ok(CheckUrl::Helper(Helper::RedditPostUrl(arg))) => {
            CheckUrl::Url(reddit_post_url(&arg.replace("__last_url__", final_url)))
        }
        Ok(CheckUrl::Helper(h)) => match helper_text(h, page, site_api).await? {
            Ok(url) => CheckUrl::Url(url),
            Err(e) => return Ok(invalid(format!("url {}: {e}", check.url))),
        },
        Ok(t) => t.clone(),
        Err(e) => return Ok(invalid(e.to_string())),
    };
    let loaded = match &target {
        CheckUrl::Url(url) => page.open(url).await.map(|_| url.clone()),
        _ => page.use_final_page().await.map(|_| "last".to_string()),
    };
    let at = match loaded {
        Ok(at) => at,
        Err(PageError::Fatal(e)) => return Err(PageError::Fatal(e)),
        Err(e) => {
            return Ok(CheckOutcome {
                verdict: Verdict::Fail,
                got: String::new(),
                detail: format!("{}: {e}", check.url),
            })
        }
    };
    let text = match check.locator.class() {
        Err(e) => return Ok(invalid(e.to_string())),
        Ok(Locator::Content) => match page.content().await {
            Ok(html) => html,
            Err(PageError::Fatal(e)) => return Err(PageError::Fatal(e)),
            Err(e) => return Ok(invalid(format!("page.content() at {at}: {e}"))),
        },
        Ok(Locator::Script(expr)) => {
            for action in &check.prep_actions {
                match page.eval(action).await {
                    Ok(_) => {}
                    Err(PageError::Fatal(e)) => return Err(PageError::Fatal(e)),
                    Err(PageError::Unsupported(e)) => return Ok(invalid(format!("prep action at {at}: {e}"))),
                    Err(_) => break,
                }
            }
            match page.eval(expr).await {
                Ok(v) => str_of(&v),
                Err(PageError::Fatal(e)) => return Err(PageError::Fatal(e)),
                Err(PageError::Unsupported(e)) => return Ok(invalid(format!("locator at {at}: {e}"))),
                Err(_) => String::new(),
            }
        }
        Ok(Locator::Helper(h)) => match helper_text(h, page, site_api).await? {
            Ok(t) => t,
            Err(e) => return Ok(invalid(format!("locator {}: {e}", check.locator))),
        },
    };
    let text = html_unescape(&text);
    match contents_match(&check.required_contents, &text) {
        Ok(ok) => {
            let shown: String = text.chars().take(200).collect();
            Ok(CheckOutcome {
                verdict: Verdict::from_bool(ok),
                detail: format!("{at} {:?}", check.locator.as_str()),
                got: shown,
            })
        }
        Err(e) => Ok(invalid(e.to_string())),
    }
}

/// `document.querySelector("<css>").<property>`: the locators a reader
/// without JavaScript (the fixture sites' HTTP checker) can still evaluate.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SimpleQuery {
    pub selector: String,
    pub property: Property,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Property {
    InnerText,
    OuterText,
    Value,
}

impl SimpleQuery {
    /// Recognises the simple form; `None` for any other expression.
    pub fn parse(expression: &str) -> Option<SimpleQuery> {
        let rest = expression.trim().strip_prefix("document.querySelector(")?;
        let quote = rest.chars().next().filter(|c| *c == '"' || *c == '\'')?;
        let rest = &rest[1..];
        let end = rest.find(quote)?;
        let selector = &rest[..end];
        let property = match &rest[end + 1..] {
            ").innerText" => Property::InnerText,
            ").outerText" => Property::OuterText,
            ").value" => Property::Value,
            _ => return None,
        };
        (!selector.trim().is_empty()).then(|| SimpleQuery { selector: selector.to_string(), property })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn helpers_parse_as_python_calls() {
        assert_eq!(
            parse_helper("reddit_get_post_url('__last_url__')"),
            Ok(Helper::RedditPostUrl("__last_url__".into()))
        );
        assert_eq!(parse_helper("shopping_get_latest_order_url()"), Ok(Helper::ShoppingLatestOrderUrl));
        assert_eq!(
            parse_helper("gitlab_get_project_memeber_role(__page__, 'yjlou')"),
            Ok(Helper::GitlabMemberRole("yjlou".into()))
        );
        assert!(parse_helper("os.system('x')").is_err());
        assert!(parse_helper("reddit_get_post_url(x)").is_err());
    }

    #[test]
    fn urls_and_locators_classify_as_webarena_does() {
        assert_eq!(check_url("last"), Ok(CheckUrl::Last));
        assert!(matches!(check_url("func:reddit_get_post_url('__last_url__')"), Ok(CheckUrl::Helper(_))));
        assert_eq!(locator("  "), Ok(Locator::Content));
        assert!(matches!(locator("[...document.querySelectorAll('a')].length"), Ok(Locator::Script(_))));
        assert!(locator("window.x").is_err());
        assert_eq!(reddit_post_url("http://r:9/f/books/12/a-title/comment/9"), "http://r:9/f/books/12/");
        assert_eq!(reddit_post_url("http://r:9/forums"), "http://r:9/forums");
    }

    #[test]
    fn contents_split_or_and_clean_once() {
        let c = RequiredContents { exact_match: None, must_include: Some(vec!["Closed |OR| merged".into()]) };
        assert_eq!(contents_match(&c, "Issue  MERGED"), Ok(true));
        let e = RequiredContents { exact_match: Some("'a  b'".into()), must_include: None };
        assert_eq!(contents_match(&e, " A  B "), Ok(true));
        assert_eq!(contents_match(&e, "\"'a  b'\""), Ok(false));
        assert_eq!(
            SimpleQuery::parse("document.querySelector('#state').outerText"),
            Some(SimpleQuery { selector: "#state".into(), property: Property::OuterText })
        );
    }

    #[test]
    fn helper_and_contents_errors_read_as_before() {
        let cases: [(&dyn std::fmt::Display, &str); 7] = [
            (&HelperError::NoSiteApi, "the shopping helpers need the shopping site's REST API, and none is configured"),
            (&HelperError::SiteApi(SiteApiError("HTTP 401".into())), "HTTP 401"),
            (&HelperError::NoOrderId, "the latest order has no integer increment_id"),
            (&HelperError::NoNickname, "the latest review has no nickname"),
            (&HelperError::RatingNotNamed, "the first review's first rating is not named \"Rating\""),
            (
                &HelperError::ReviewsNotList { sku: "B0X".into(), got: serde_json::json!({"message": "no"}) },
                "the reviews of B0X are not a list: {\"message\":\"no\"}",
            ),
            (&NoRequiredContents, "required_contents sets neither exact_match nor must_include"),
        ];
        for (e, text) in cases {
            assert_eq!(e.to_string(), text);
        }
    }
}
