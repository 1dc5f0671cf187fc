//! The span log: one JSON line per closed span, for measuring where an attempt's time goes
//! without Jaeger (`scripts/bench/phases.sh` reads it; docs/performance.md has the table).
//!
//! `SKILLSHIFT_SPAN_LOG=FILE` turns it on. Each line is
//! `{"name": .., "id": .., "parent": .., "start_us": .., "wall_us": .., "entered_us": .., "busy_us": ..,
//! "fields": {..}}`: the span's name, its id and its parent's (0 for a root) as the process numbers
//! them, when it opened (microseconds since the log was opened) and how long it lived from opening to
//! closing, when it was first entered and how long from then to its last exit (what an instrumented
//! async phase took on the clock, its waits included, without the time its handle was kept after
//! the work; both absent for a span never entered), and its fields as text, those recorded after it
//! opened included. Spans of the project's crates are logged down to DEBUG, so the
//! phases that only this log needs (a record's delivery, say) cost nothing elsewhere.
//!
//! The first line is the log's epoch, `{"epoch": {"clock": "monotonic", "us": ..}}`: the moment the
//! times count from, read on the machine's monotonic clock (`CLOCK_MONOTONIC`, Python's
//! `time.monotonic()`), so that samples another process takes on that clock (the machine's CPU,
//! `scripts/bench/cpu_samples.py`) can be set against the spans.
//!
//! Without the variable the layer's filter enables nothing, so no call site is enabled on its
//! account. Lines are buffered and written when a root span closes, when the buffer fills, and
//! when the process's [`crate::Guard`] is dropped or shut down; a line that cannot be written is
//! lost, with one warning on stderr, never an error of the run.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing::Subscriber;
use tracing_subscriber::filter::{LevelFilter, Targets};
use tracing_subscriber::layer::Context;
use tracing_subscriber::registry::LookupSpan;
use tracing_subscriber::Layer;

/// The variable naming the span log's file.
pub const SPAN_LOG_VAR: &str = "SKILLSHIFT_SPAN_LOG";

/// The spans the log keeps: the project's crates' (a target matches the prefix).
const LOGGED: &str = "skillshift";

/// Why the span log could not be opened.
#[derive(Debug, thiserror::Error)]
pub enum SpanLogError {
    #[error("{SPAN_LOG_VAR}: cannot create {}: {source}", .path.display())]
    Create { path: PathBuf, source: std::io::Error },
}

/// Where closed spans are written; shared with the [`crate::Guard`] so it can flush at the end.
#[derive(Clone, Default)]
pub struct SpanLog {
    // A std mutex: held to append one line to a buffer (or write a full buffer out), never across
    // an await; spans close on every runtime thread.
    out: Option<Arc<Mutex<BufWriter<File>>>>,
    epoch: Option<Instant>,
    warned: Arc<AtomicBool>,
}

impl std::fmt::Debug for SpanLog {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SpanLog").field("on", &self.out.is_some()).finish()
    }
}

impl SpanLog {
    /// The log `SKILLSHIFT_SPAN_LOG` asks for, or an inert one; a file that cannot be created is
    /// an error naming it.
    pub fn from_env() -> Result<SpanLog, SpanLogError> {
        match std::env::var_os(SPAN_LOG_VAR) {
            Some(path) if !path.is_empty() => SpanLog::create(Path::new(&path)),
            _ => Ok(SpanLog::default()),
        }
    }

    /// A log written to `path` (created, or truncated).
    pub fn create(path: &Path) -> Result<SpanLog, SpanLogError> {
        let create = |source| SpanLogError::Create { path: path.to_path_buf(), source };
        let mut out = BufWriter::with_capacity(1 << 16, File::create(path).map_err(create)?);
        let epoch = Instant::now();
        writeln!(out, "{{\"epoch\":{{\"clock\":\"monotonic\",\"us\":{}}}}}", monotonic_us()).map_err(create)?;
        Ok(SpanLog { out: Some(Arc::new(Mutex::new(out))), epoch: Some(epoch), warned: Arc::default() })
    }

    /// Whether spans are being logged.
    pub fn is_on(&self) -> bool {
        self.out.is_some()
    }

    /// What the layer keeps: nothing when the log is off.
    pub fn filter(&self) -> Targets {
        if !self.is_on() {
            return Targets::new();
        }
        Targets::new().with_target(LOGGED, LevelFilter::DEBUG)
    }

    /// Writes what is buffered.
    pub fn flush(&self) {
        if let Some(out) = &self.out {
            let flushed = out.lock().map_err(|_| std::io::Error::other("poisoned")).and_then(|mut w| w.flush());
            if let Err(e) = flushed {
                self.warn(&e);
            }
        }
    }

    fn append(&self, line: &str, root: bool) {
        let Some(out) = &self.out else { return };
        let written = match out.lock() {
            Ok(mut w) => w.write_all(line.as_bytes()).and_then(|()| if root { w.flush() } else { Ok(()) }),
            Err(_) => Err(std::io::Error::other("poisoned")),
        };
        if let Err(e) = written {
            self.warn(&e);
        }
    }

    fn warn(&self, e: &std::io::Error) {
        if !self.warned.swap(true, Ordering::Relaxed) {
            eprintln!("skillshift: warning: {SPAN_LOG_VAR}: spans lost: {e}");
        }
    }

    fn since_epoch_us(&self, at: Instant) -> u128 {
        self.epoch.map_or(0, |e| at.saturating_duration_since(e).as_micros())
    }
}

/// What the layer keeps on an open span.
struct Open {
    at: Instant,
    /// The first enter and the last exit.
    entered: Option<(Instant, Instant)>,
    fields: BTreeMap<&'static str, String>,
}

struct Fields<'a>(&'a mut BTreeMap<&'static str, String>);

impl Visit for Fields<'_> {
    fn record_str(&mut self, field: &Field, value: &str) {
        self.0.insert(field.name(), value.to_string());
    }

    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        self.0.insert(field.name(), format!("{value:?}"));
    }
}

impl<S> Layer<S> for SpanLog
where
    S: Subscriber + for<'a> LookupSpan<'a>,
{
    fn on_new_span(&self, attrs: &Attributes<'_>, id: &Id, ctx: Context<'_, S>) {
        let Some(span) = ctx.span(id) else { return };
        let mut fields = BTreeMap::new();
        attrs.record(&mut Fields(&mut fields));
        span.extensions_mut().insert(Open { at: Instant::now(), entered: None, fields });
    }

    fn on_record(&self, id: &Id, values: &Record<'_>, ctx: Context<'_, S>) {
        let Some(span) = ctx.span(id) else { return };
        let mut extensions = span.extensions_mut();
        if let Some(open) = extensions.get_mut::<Open>() {
            values.record(&mut Fields(&mut open.fields));
        }
    }

    fn on_enter(&self, id: &Id, ctx: Context<'_, S>) {
        let Some(span) = ctx.span(id) else { return };
        let mut extensions = span.extensions_mut();
        if let Some(open) = extensions.get_mut::<Open>() {
            let now = Instant::now();
            let first = open.entered.map_or(now, |(first, _)| first);
            open.entered = Some((first, now));
        }
    }

    fn on_exit(&self, id: &Id, ctx: Context<'_, S>) {
        let Some(span) = ctx.span(id) else { return };
        let mut extensions = span.extensions_mut();
        if let Some(open) = extensions.get_mut::<Open>() {
            if let Some((_, last)) = open.entered.as_mut() {
                *last = Instant::now();
            }
        }
    }

    fn on_close(&self, id: Id, ctx: Context<'_, S>) {
        let Some(span) = ctx.span(&id) else { return };
        let Some(open) = span.extensions_mut().remove::<Open>() else { return };
        let parent = span.parent().map_or(0, |p| p.id().into_u64());
        let mut line = String::with_capacity(160);
        let _ = write!(
            line,
            "{{\"name\":{},\"id\":{},\"parent\":{parent},\"start_us\":{},\"wall_us\":{},",
            quoted(span.name()),
            id.into_u64(),
            self.since_epoch_us(open.at),
            open.at.elapsed().as_micros()
        );
        if let Some((first, last)) = open.entered {
            let busy = last.saturating_duration_since(first).as_micros();
            let _ = write!(line, "\"entered_us\":{},\"busy_us\":{busy},", self.since_epoch_us(first));
        }
        line.push_str("\"fields\":{");
        for (i, (k, v)) in open.fields.iter().enumerate() {
            let _ = write!(line, "{}{}:{}", if i > 0 { "," } else { "" }, quoted(k), quoted(v));
        }
        line.push_str("}}\n");
        self.append(&line, parent == 0);
    }
}

/// The machine's monotonic clock (`CLOCK_MONOTONIC`, what `Instant` reads) in microseconds.
fn monotonic_us() -> i128 {
    let t = rustix::time::clock_gettime(rustix::time::ClockId::Monotonic);
    i128::from(t.tv_sec) * 1_000_000 + i128::from(t.tv_nsec) / 1_000
}

/// `s` as a JSON string.
fn quoted(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if u32::from(c) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", u32::from(c));
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use tracing_subscriber::layer::SubscriberExt;

    #[test]
    fn each_closed_span_is_a_json_line_with_its_parent_and_fields() {
        let dir = std::env::temp_dir().join(format!("span-log-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("spans.jsonl");
        let log = SpanLog::create(&path).unwrap();
        let subscriber = tracing_subscriber::registry().with(log.clone().with_filter(log.filter()));
        tracing::subscriber::with_default(subscriber, || {
            let run = tracing::info_span!(target: "skillshift_telemetry::spans", "run", uid = "a\"b", steps = tracing::field::Empty);
            run.in_scope(|| {
                let _step = tracing::debug_span!(target: "skillshift_worker::x", "settle", settled = true).entered();
            });
            run.record("steps", 3);
            // Another crate's span is not the log's.
            drop(tracing::info_span!(target: "hyper", "conn").entered());
            drop(run);
            // A span never entered has no busy window.
            drop(tracing::info_span!(target: "skillshift_worker::x", "held"));
        });
        log.flush();
        let text = std::fs::read_to_string(&path).unwrap();
        let mut lines: Vec<serde_json::Value> = text.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
        // The epoch first, on the monotonic clock, which had run before the log was opened.
        let epoch = lines.remove(0);
        assert_eq!(epoch["epoch"]["clock"], "monotonic", "{text}");
        let now_us = monotonic_us();
        assert!(epoch["epoch"]["us"].as_i64().is_some_and(|us| us > 0 && i128::from(us) <= now_us), "{text}");
        assert_eq!(lines.len(), 3, "{text}");
        assert_eq!(lines[0]["name"], "settle");
        assert_eq!(lines[0]["fields"]["settled"], "true");
        assert_eq!(lines[1]["name"], "run");
        assert_eq!(lines[1]["parent"], 0);
        assert_eq!(lines[0]["parent"], lines[1]["id"], "the child names its parent");
        assert_eq!(lines[1]["fields"]["uid"], "a\"b");
        assert_eq!(lines[1]["fields"]["steps"], "3", "a field recorded later is kept");
        assert!(lines[1]["busy_us"].as_u64().is_some() && lines[1]["entered_us"].as_u64().is_some(), "{text}");
        assert!(
            lines[1]["busy_us"].as_u64() <= lines[1]["wall_us"].as_u64(),
            "the busy window lies within the span's life"
        );
        assert_eq!(lines[2]["name"], "held");
        assert!(lines[2].get("busy_us").is_none(), "never entered: {text}");
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn an_inert_log_enables_nothing() {
        let log = SpanLog::default();
        assert!(!log.is_on());
        assert!(!log.filter().would_enable("skillshift_telemetry::spans", &tracing::Level::ERROR));
    }
}
