//! A worker's metrics: steps, attempts by outcome, browser restarts, LLM
//! calls, tokens and latency, trajectory screenshots.

use std::sync::atomic::AtomicU64;
use std::sync::OnceLock;
use std::time::Duration;

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{exponential_buckets, Histogram};
use prometheus_client::registry::Registry;

use super::{secs, Exposition};

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct OutcomeLabel {
    outcome: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct TokenLabels {
    model: String,
    /// `input` or `output`, as `gen_ai.token.type`.
    r#type: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ModelLabel {
    model: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct CallLabels {
    model: String,
    result: String,
}

fn llm_histogram() -> Histogram {
    // 50 ms .. ~100 s: an LLM call is seconds; the task timeout is 600 s.
    Histogram::new(exponential_buckets(0.05, 2.0, 12))
}

/// A worker's metric handles. Clones share the same series.
#[derive(Clone, Debug)]
pub struct WorkerMetrics {
    steps: Counter,
    attempts: Family<OutcomeLabel, Counter>,
    attempts_running: Gauge,
    browser_restarts: Counter,
    llm_calls: Family<CallLabels, Counter>,
    llm_tokens: Family<TokenLabels, Counter>,
    llm_latency: Family<ModelLabel, Histogram, fn() -> Histogram>,
    screenshots: Counter,
    screenshot_seconds: Counter<f64, AtomicU64>,
    screenshot_wait_seconds: Counter<f64, AtomicU64>,
    screenshots_reused: Counter,
}

/// What the trajectory screenshots cost so far ([`WorkerMetrics::screenshot_totals`]).
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct ScreenshotTotals {
    /// Screenshots taken from the browser.
    pub taken: u64,
    /// The time they took, summed over the attempts that took them.
    pub seconds: f64,
    /// The part of that time their steps waited for them: a screenshot taken beside the step's
    /// observation or its agent's reply costs the step only the time it outlasts them.
    pub wait_seconds: f64,
    /// Steps that kept the attempt's previous screenshot instead (the same page, unchanged).
    pub reused: u64,
}

/// The process's worker metrics, for code far from `main` (run loop, LLM client).
static GLOBAL: OnceLock<(WorkerMetrics, Exposition)> = OnceLock::new();

impl WorkerMetrics {
    /// The process-wide instance: the run loop, the agents and the gRPC loop
    /// count into it, and `skillshift worker --metrics-addr` serves it.
    pub fn global() -> &'static WorkerMetrics {
        &GLOBAL.get_or_init(WorkerMetrics::new).0
    }

    /// The exposition of [`WorkerMetrics::global`].
    pub fn global_exposition() -> Exposition {
        GLOBAL.get_or_init(WorkerMetrics::new).1.clone()
    }

    pub fn new() -> (Self, Exposition) {
        let m = WorkerMetrics {
            steps: Counter::default(),
            attempts: Family::default(),
            attempts_running: Gauge::default(),
            browser_restarts: Counter::default(),
            llm_calls: Family::default(),
            llm_tokens: Family::default(),
            llm_latency: Family::new_with_constructor(llm_histogram as fn() -> Histogram),
            screenshots: Counter::default(),
            screenshot_seconds: Counter::default(),
            screenshot_wait_seconds: Counter::default(),
            screenshots_reused: Counter::default(),
        };
        let mut r = Registry::with_prefix("skillshift_worker");
        r.register("steps", "Agent steps taken", m.steps.clone());
        r.register("attempts", "Attempts finished, by outcome", m.attempts.clone());
        r.register("attempts_running", "Attempts in progress", m.attempts_running.clone());
        r.register("browser_restarts", "Browser sessions restarted after a fault", m.browser_restarts.clone());
        r.register("llm_calls", "LLM chat calls, by model and result (ok, error)", m.llm_calls.clone());
        r.register("llm_tokens", "LLM tokens, by model and type (input, output)", m.llm_tokens.clone());
        r.register("llm_latency_seconds", "LLM chat call latency, by model", m.llm_latency.clone());
        r.register("screenshots", "Trajectory screenshots taken from the browser", m.screenshots.clone());
        r.register("screenshot_seconds", "Time spent taking trajectory screenshots", m.screenshot_seconds.clone());
        r.register(
            "screenshot_wait_seconds",
            "Of that time, what the steps waited for (a screenshot beside the observation or the agent's reply costs only what it outlasts them)",
            m.screenshot_wait_seconds.clone(),
        );
        r.register(
            "screenshots_reused",
            "Steps that kept the attempt's previous screenshot of the same, unchanged page",
            m.screenshots_reused.clone(),
        );
        (m, Exposition::new(r))
    }

    pub fn step(&self) {
        self.steps.inc();
    }

    pub fn attempt_started(&self) {
        self.attempts_running.inc();
    }

    /// An attempt finished with `outcome` (`success`, `failure`, `timeout`, `error`).
    pub fn attempt_finished(&self, outcome: &str) {
        self.attempts_running.dec();
        self.attempts.get_or_create(&OutcomeLabel { outcome: outcome.to_string() }).inc();
    }

    pub fn browser_restarted(&self) {
        self.browser_restarts.inc();
    }

    /// One LLM call: its latency, whether it succeeded and the tokens it used.
    pub fn llm_call(&self, model: &str, latency: Duration, ok: bool, input_tokens: u64, output_tokens: u64) {
        let model_s = model.to_string();
        self.llm_calls
            .get_or_create(&CallLabels { model: model_s.clone(), result: if ok { "ok" } else { "error" }.to_string() })
            .inc();
        self.llm_latency.get_or_create(&ModelLabel { model: model_s.clone() }).observe(secs(latency));
        self.llm_tokens
            .get_or_create(&TokenLabels { model: model_s.clone(), r#type: "input".into() })
            .inc_by(input_tokens);
        self.llm_tokens.get_or_create(&TokenLabels { model: model_s, r#type: "output".into() }).inc_by(output_tokens);
    }

    /// A trajectory screenshot was taken from the browser in `took`, of which its step waited `waited`.
    pub fn screenshot(&self, took: Duration, waited: Duration) {
        self.screenshots.inc();
        self.screenshot_seconds.inc_by(secs(took));
        self.screenshot_wait_seconds.inc_by(secs(waited.min(took)));
    }

    /// A step kept the attempt's previous screenshot instead of taking one.
    pub fn screenshot_reused(&self) {
        self.screenshots_reused.inc();
    }

    pub fn screenshot_totals(&self) -> ScreenshotTotals {
        ScreenshotTotals {
            taken: self.screenshots.get(),
            seconds: self.screenshot_seconds.get(),
            wait_seconds: self.screenshot_wait_seconds.get(),
            reused: self.screenshots_reused.get(),
        }
    }
}
