//! The client's configuration: the endpoint, key and model from the standard
//! variables (`OPENAI_BASE_URL`, `OPENAI_API_KEY`, `OPENAI_MODEL`) plus a few
//! `SKILLSHIFT_LLM_*` knobs ([`LlmConfig`]), how transient failures are retried
//! ([`RetryPolicy`]), and what a call costs ([`price_per_mtok`]).

use std::time::Duration;

use rand::Rng;

use super::LlmError;

pub const DEFAULT_BASE_URL: &str = "https://api.openai.com/v1";
pub const DEFAULT_MODEL: &str = "gpt-4o";
/// WebArena's generation budget for one step (its `max_tokens`).
pub const DEFAULT_MAX_TOKENS: u32 = 384;
/// How transient failures (429, 5xx, timeouts, refused connections) are retried.
#[derive(Debug, Clone, PartialEq)]
pub struct RetryPolicy {
    /// Retries after the first try; the total is `max_retries + 1` HTTP calls at most.
    pub max_retries: u32,
    /// The first backoff; it doubles per retry.
    pub base_delay: Duration,
    /// No single wait is longer than this, `Retry-After` included.
    pub max_delay: Duration,
    /// No retry starts once this much time has passed since the first try.
    pub total_budget: Duration,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        RetryPolicy {
            max_retries: 6,
            base_delay: Duration::from_secs(1),
            max_delay: Duration::from_secs(30),
            total_budget: Duration::from_secs(180),
        }
    }
}

impl RetryPolicy {
    /// The wait before retry number `retry` (0-based): `min(max_delay, base * 2^retry)` scaled by a random
    /// factor in [0.5, 1) ("equal jitter"), but never less than the server's `Retry-After`, itself capped.
    pub fn delay(&self, retry: u32, retry_after: Option<Duration>) -> Duration {
        let exp = self.base_delay.saturating_mul(1u32.checked_shl(retry.min(20)).unwrap_or(u32::MAX));
        let capped = exp.min(self.max_delay);
        let jittered = capped.mul_f64(rand::rng().random_range(0.5..1.0));
        match retry_after {
            Some(ra) => jittered.max(ra.min(self.max_delay)),
            None => jittered,
        }
    }
}

/// USD per million tokens, input and output.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Price {
    pub input_per_mtok: f64,
    pub output_per_mtok: f64,
}

impl Price {
    pub fn cost(&self, tokens_in: u64, tokens_out: u64) -> f64 {
        (tokens_in as f64 * self.input_per_mtok + tokens_out as f64 * self.output_per_mtok) / 1e6
    }
}

/// List prices known when this table was written (USD per million tokens, input / output). Prices move: set
/// `SKILLSHIFT_LLM_PRICE=<in>,<out>` for a model missing here or priced differently; an unknown model has no cost.
const PRICES: &[(&str, f64, f64)] = &[
    ("gpt-5", 1.25, 10.0),
    ("gpt-5-mini", 0.25, 2.0),
    ("gpt-5-nano", 0.05, 0.40),
    ("gpt-4.1", 2.0, 8.0),
    ("gpt-4.1-mini", 0.40, 1.60),
    ("gpt-4.1-nano", 0.10, 0.40),
    ("gpt-4o", 2.50, 10.0),
    ("gpt-4o-mini", 0.15, 0.60),
    ("gpt-4-turbo", 10.0, 30.0),
    ("gpt-4", 30.0, 60.0),
    ("gpt-3.5-turbo", 0.50, 1.50),
    ("o1", 15.0, 60.0),
    ("o3", 2.0, 8.0),
    ("o3-mini", 1.10, 4.40),
    ("o4-mini", 1.10, 4.40),
];

/// The listed price of `model`: an exact entry, or the longest entry that `model` extends with `-...` (dated
/// snapshots such as `gpt-4o-2024-08-06`). A provider prefix (`openai/gpt-4o`) is ignored.
pub fn price_per_mtok(model: &str) -> Option<Price> {
    let m = model.rsplit('/').next().unwrap_or(model).to_ascii_lowercase();
    PRICES
        .iter()
        .filter(|(name, _, _)| m == *name || m.strip_prefix(name).is_some_and(|rest| rest.starts_with('-')))
        .max_by_key(|(name, _, _)| name.len())
        .map(|&(_, input_per_mtok, output_per_mtok)| Price { input_per_mtok, output_per_mtok })
}

/// The price of one call: the configured override, else the listed price of the model the server says
/// answered, else (when the reply names no model) of the requested one. A reply from a model missing from the
/// table, such as the scripted test server's, has no price, whatever was requested.
pub fn call_price(configured: Option<Price>, response_model: Option<&str>, request_model: &str) -> Option<Price> {
    configured.or_else(|| price_per_mtok(response_model.unwrap_or(request_model)))
}

/// Everything needed to call one model.
#[derive(Clone, PartialEq)]
pub struct LlmConfig {
    /// Without the trailing `/`, e.g. `https://api.openai.com/v1`.
    pub base_url: String,
    pub api_key: Option<String>,
    pub model: String,
    pub temperature: f64,
    /// `None` leaves the limit to the server.
    pub max_tokens: Option<u32>,
    /// The deadline of one HTTP call, connection included.
    pub request_timeout: Duration,
    pub connect_timeout: Duration,
    pub retry: RetryPolicy,
    /// Overrides the price table for this model.
    pub price: Option<Price>,
}

impl std::fmt::Debug for LlmConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LlmConfig")
            .field("base_url", &self.base_url)
            .field("api_key", &self.api_key.as_ref().map(|_| "<set>"))
            .field("model", &self.model)
            .field("temperature", &self.temperature)
            .field("max_tokens", &self.max_tokens)
            .field("request_timeout", &self.request_timeout)
            .field("retry", &self.retry)
            .field("price", &self.price)
            .finish()
    }
}

impl LlmConfig {
    /// Defaults for `model` at `base_url`: temperature 0, WebArena's 384 output tokens, 120 s per call.
    pub fn new(base_url: &str, model: &str) -> LlmConfig {
        LlmConfig {
            base_url: base_url.trim_end_matches('/').to_string(),
            api_key: None,
            model: model.to_string(),
            temperature: 0.0,
            max_tokens: Some(DEFAULT_MAX_TOKENS),
            request_timeout: Duration::from_secs(120),
            connect_timeout: Duration::from_secs(10),
            retry: RetryPolicy::default(),
            price: None,
        }
    }

    /// Reads the process environment; see [`LlmConfig::from_lookup`].
    pub fn from_env(model: Option<String>) -> Result<LlmConfig, LlmError> {
        LlmConfig::from_lookup(model, |name| std::env::var(name).ok())
    }

    /// Builds the configuration from variables looked up by name: `OPENAI_BASE_URL` (default the OpenAI API),
    /// `OPENAI_API_KEY` (required for the OpenAI API itself, optional elsewhere), the model from `model`, else
    /// `OPENAI_MODEL`, else [`DEFAULT_MODEL`]; `SKILLSHIFT_LLM_MAX_TOKENS` (0 leaves it to the server),
    /// `SKILLSHIFT_LLM_TIMEOUT_S` (per HTTP call) and `SKILLSHIFT_LLM_PRICE` (`<in>,<out>` USD per million tokens).
    pub fn from_lookup(model: Option<String>, lookup: impl Fn(&str) -> Option<String>) -> Result<LlmConfig, LlmError> {
        let var = |name: &str| lookup(name).map(|v| v.trim().to_string()).filter(|v| !v.is_empty());
        let base_url = var("OPENAI_BASE_URL").unwrap_or_else(|| DEFAULT_BASE_URL.to_string());
        if !(base_url.starts_with("http://") || base_url.starts_with("https://")) {
            return Err(LlmError::Config(format!(
                "OPENAI_BASE_URL must start with http:// or https://, found '{base_url}'"
            )));
        }
        let model = model.filter(|m| !m.trim().is_empty()).or_else(|| var("OPENAI_MODEL"));
        let mut cfg = LlmConfig::new(&base_url, model.as_deref().unwrap_or(DEFAULT_MODEL));
        cfg.api_key = var("OPENAI_API_KEY");
        if cfg.api_key.is_none() && cfg.base_url == DEFAULT_BASE_URL {
            return Err(LlmError::Config(format!(
                "OPENAI_API_KEY is not set (needed for {DEFAULT_BASE_URL}; set OPENAI_BASE_URL for another server)"
            )));
        }
        if let Some(v) = var("SKILLSHIFT_LLM_MAX_TOKENS") {
            let n: u32 = v.parse().map_err(|_| {
                LlmError::Config(format!("SKILLSHIFT_LLM_MAX_TOKENS must be a whole number, found '{v}'"))
            })?;
            cfg.max_tokens = (n > 0).then_some(n);
        }
        if let Some(v) = var("SKILLSHIFT_LLM_TIMEOUT_S") {
            cfg.request_timeout = v
                .parse::<f64>()
                .ok()
                .filter(|s| *s > 0.0)
                .and_then(|s| Duration::try_from_secs_f64(s).ok())
                .ok_or_else(|| {
                    LlmError::Config(format!(
                        "SKILLSHIFT_LLM_TIMEOUT_S must be a positive number of seconds, found '{v}'"
                    ))
                })?;
        }
        if let Some(v) = var("SKILLSHIFT_LLM_PRICE") {
            let parsed = v
                .split_once(',')
                .and_then(|(i, o)| Some((i.trim().parse::<f64>().ok()?, o.trim().parse::<f64>().ok()?)))
                .filter(|(i, o)| i.is_finite() && o.is_finite() && *i >= 0.0 && *o >= 0.0);
            let (i, o) = parsed.ok_or_else(|| {
                LlmError::Config(format!(
                    "SKILLSHIFT_LLM_PRICE must be '<input>,<output>' USD per million tokens, found '{v}'"
                ))
            })?;
            cfg.price = Some(Price { input_per_mtok: i, output_per_mtok: o });
        }
        Ok(cfg)
    }

    /// The `gen_ai.provider.name`: `openai` for any server reached through the OpenAI API, as the GenAI
    /// conventions ask of a client that cannot know the system behind it; Azure OpenAI by its host.
    pub fn provider(&self) -> &'static str {
        if self.server().0.ends_with(".openai.azure.com") {
            "azure.ai.openai"
        } else {
            "openai"
        }
    }

    /// `server.address` and `server.port` of the base URL.
    pub fn server(&self) -> (String, Option<u16>) {
        let rest = self.base_url.split_once("://").map_or(self.base_url.as_str(), |(_, r)| r);
        let authority = rest.split('/').next().unwrap_or(rest);
        let authority = authority.rsplit('@').next().unwrap_or(authority);
        match authority.rsplit_once(':').and_then(|(h, p)| Some((h, p.parse::<u16>().ok()?))) {
            Some((host, port)) => (host.to_string(), Some(port)),
            None => (authority.to_string(), None),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use super::*;

    fn lookup(vars: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
        let map: HashMap<String, String> = vars.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        move |k| map.get(k).cloned()
    }

    #[test]
    fn config_from_variables() {
        let cfg = LlmConfig::from_lookup(None, lookup(&[("OPENAI_API_KEY", "sk-x")])).unwrap();
        assert_eq!(cfg.base_url, DEFAULT_BASE_URL);
        assert_eq!(cfg.model, DEFAULT_MODEL);
        assert_eq!(cfg.temperature, 0.0);
        assert_eq!(cfg.provider(), "openai");
        assert_eq!(cfg.server(), ("api.openai.com".to_string(), None));

        let cfg = LlmConfig::from_lookup(
            Some("m1".into()),
            lookup(&[
                ("OPENAI_BASE_URL", "http://127.0.0.1:8000/v1/"),
                ("OPENAI_MODEL", "ignored"),
                ("SKILLSHIFT_LLM_MAX_TOKENS", "0"),
                ("SKILLSHIFT_LLM_TIMEOUT_S", "2.5"),
                ("SKILLSHIFT_LLM_PRICE", "1, 2"),
            ]),
        )
        .unwrap();
        assert_eq!(cfg.base_url, "http://127.0.0.1:8000/v1");
        assert_eq!(cfg.model, "m1");
        assert_eq!(cfg.api_key, None);
        assert_eq!(cfg.max_tokens, None);
        assert_eq!(cfg.request_timeout, Duration::from_millis(2500));
        assert_eq!(cfg.price, Some(Price { input_per_mtok: 1.0, output_per_mtok: 2.0 }));
        assert_eq!(cfg.provider(), "openai");
        assert_eq!(cfg.server(), ("127.0.0.1".to_string(), Some(8000)));
        let cfg = LlmConfig::from_lookup(None, lookup(&[("OPENAI_BASE_URL", "x"), ("OPENAI_MODEL", "m2")]));
        assert!(cfg.is_err());
    }

    #[test]
    fn config_errors_name_the_variable() {
        let err = |vars: &[(&str, &str)]| LlmConfig::from_lookup(None, lookup(vars)).unwrap_err().to_string();
        assert!(err(&[]).contains("OPENAI_API_KEY"));
        assert!(err(&[("OPENAI_BASE_URL", "ftp://x")]).contains("OPENAI_BASE_URL"));
        let base = ("OPENAI_BASE_URL", "http://h/v1");
        assert!(err(&[base, ("SKILLSHIFT_LLM_MAX_TOKENS", "-1")]).contains("SKILLSHIFT_LLM_MAX_TOKENS"));
        assert!(err(&[base, ("SKILLSHIFT_LLM_TIMEOUT_S", "0")]).contains("SKILLSHIFT_LLM_TIMEOUT_S"));
        assert!(err(&[base, ("SKILLSHIFT_LLM_TIMEOUT_S", "1e300")]).contains("SKILLSHIFT_LLM_TIMEOUT_S"));
        assert!(err(&[base, ("SKILLSHIFT_LLM_PRICE", "3")]).contains("SKILLSHIFT_LLM_PRICE"));
    }

    #[test]
    fn prices_match_snapshots_by_longest_prefix() {
        let p = |m| price_per_mtok(m).map(|p| (p.input_per_mtok, p.output_per_mtok));
        assert_eq!(p("gpt-4o"), Some((2.5, 10.0)));
        assert_eq!(p("gpt-4o-2024-08-06"), Some((2.5, 10.0)));
        assert_eq!(p("gpt-4o-mini-2024-07-18"), Some((0.15, 0.60)));
        assert_eq!(p("openai/gpt-4.1-mini"), Some((0.40, 1.60)));
        assert_eq!(p("gpt-4-0613"), Some((30.0, 60.0)));
        assert_eq!(p("gpt-4ox"), None);
        assert_eq!(p("scripted-test-llm"), None);
        let price = Price { input_per_mtok: 2.5, output_per_mtok: 10.0 };
        assert!((price.cost(1_000_000, 100_000) - 3.5).abs() < 1e-12);
        let own = Price { input_per_mtok: 1.0, output_per_mtok: 1.0 };
        assert_eq!(call_price(None, Some("gpt-4o-2024-08-06"), "gpt-4o"), Some(price));
        assert_eq!(call_price(None, None, "gpt-4o"), Some(price));
        assert_eq!(call_price(None, Some("scripted-test-llm"), "gpt-4o"), None);
        assert_eq!(call_price(Some(own), Some("scripted-test-llm"), "x"), Some(own));
    }

    #[test]
    fn backoff_doubles_is_capped_and_honours_retry_after() {
        let policy = RetryPolicy {
            max_retries: 10,
            base_delay: Duration::from_millis(100),
            max_delay: Duration::from_secs(1),
            total_budget: Duration::from_secs(10),
        };
        for _ in 0..50 {
            let d0 = policy.delay(0, None);
            assert!(d0 >= Duration::from_millis(50) && d0 < Duration::from_millis(100), "{d0:?}");
            let d2 = policy.delay(2, None);
            assert!(d2 >= Duration::from_millis(200) && d2 < Duration::from_millis(400), "{d2:?}");
            let d9 = policy.delay(9, None);
            assert!(d9 >= Duration::from_millis(500) && d9 < Duration::from_secs(1), "{d9:?}");
            assert_eq!(policy.delay(0, Some(Duration::from_secs(60))), Duration::from_secs(1));
            assert!(policy.delay(40, None) <= Duration::from_secs(1));
        }
    }
}
