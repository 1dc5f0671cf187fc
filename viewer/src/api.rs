//! The viewer's JSON under `/api/*`, computed from a [`Source`] on every
//! request (the page's script renders it; nothing here builds HTML).
//!
//! * `GET /api/sweeps`: the sweeps, each with its treatments and attempt counts.
//! * `GET /api/grid?sweep&treatment`: the 18 cells: SR, its Wilson interval,
//!   successes of evaluable units, invalid units, attempts by outcome and by
//!   failure category; the cells, intervals and categories are the analysis'
//!   own (`report` prints the same numbers).
//! * `GET /api/attempts?sweep&treatment&site&condition[&outcome][&category]`:
//!   one cell's attempts, filtered.
//! * `GET /api/attempt?sweep&treatment&uid&condition&rep&attempt[&from]`: one
//!   attempt's record and trajectory, with the observation lines each step's
//!   perturbations touched. Steps come in pages ([`page_of`]): from step index
//!   `from` (0 when absent), as many as fit in [`MAX_PAGE_BYTES`] of JSON,
//!   every string of a step clipped to [`MAX_FIELD_BYTES`]; `steps_total`,
//!   `steps_from` and `steps_next` (`null` on the last page) say where the
//!   page is. A source reads a trajectory only within
//!   [`MAX_TRAJECTORY_JSON_BYTES`], at most [`MAX_TRAJECTORY_READS`] at once.
//!   With a network trace, `network` holds the panel's rows: per step of the page the
//!   requests made during it (method, URL, status, tab, type; [`crate::network`]), and on the
//!   first page those made before step 1; the trace itself is not sent.
//! * `GET /api/pair?sweep&site&task&rep&lt&lc&rt&rc`: one unit (a family and a
//!   rep) under two (treatment, condition) sides, each side its unit-outcome
//!   attempt: src against tgt-exec, or one treatment against another.
//! * `GET /api/screenshot?sweep&sha`: a screenshot's PNG.
//! * `GET /api/events`: server-sent `sweep` events naming a sweep that changed,
//!   for a live source; `204` for a source that never changes. At most
//!   [`MAX_EVENT_STREAMS`] are open at once, [`MAX_EVENT_STREAMS_PER_CLIENT`]
//!   from one address; past either, `429`.

use std::collections::{BTreeMap, HashMap};
use std::convert::Infallible;
use std::net::IpAddr;
use std::sync::Arc;

use axum::extract::{Query, State};
use axum::http::{header, StatusCode};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use axum::{Extension, Json};
use futures::StreamExt;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use skillshift_analysis::cells::analyse;
use skillshift_analysis::failures;
use skillshift_analysis::summary::summarise;
use skillshift_common::ids::{Condition, Site, Uid};
use skillshift_common::record::{Outcome, Record};
use skillshift_common::text::short;
use skillshift_common::trajectory::Trajectory;

use crate::marks::perturbed_lines;
use crate::source::{Source, SourceError};

/// The source every handler reads.
pub type Shared = Arc<dyn Source>;

/// The most of a trajectory's JSON a source reads for one request: the
/// coordinator's bound on an upload (16 MiB). A larger one (stored before that
/// bound) is refused with `422`, naming the bound; `sweep export` writes it whole.
pub const MAX_TRAJECTORY_JSON_BYTES: usize = skillshift_common::blob::MAX_TRAJECTORY_JSON_BYTES;
/// Trajectories read and paged at once, by all requests together; the next waits its turn.
pub const MAX_TRAJECTORY_READS: usize = 2;
/// The steps of one answer: at most 4 MiB of their JSON (a step alone past it is replaced by a note).
pub const MAX_PAGE_BYTES: usize = 4 << 20;
/// The bytes of one string of a step shown (an observation, an LLM reply, ...): 256 KiB, then a note.
pub const MAX_FIELD_BYTES: usize = 256 << 10;

/// Event streams open at once, from every client together.
pub const MAX_EVENT_STREAMS: usize = 64;
/// Event streams open at once from one client address (a page keeps one open).
pub const MAX_EVENT_STREAMS_PER_CLIENT: usize = 4;

/// The event streams open, in all and per client address.
#[derive(Default)]
pub struct EventStreams {
    // A std mutex: a count and a small map, touched for a moment when a stream opens or closes.
    open: std::sync::Mutex<(usize, HashMap<IpAddr, usize>)>,
}

/// One open stream; its count goes back when it is dropped (the client went away).
pub struct StreamSlot {
    streams: Arc<EventStreams>,
    ip: IpAddr,
}

/// Why no event stream was opened: a limit was reached.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum StreamsFull {
    #[error("{} event streams are open, the limit; try again later", MAX_EVENT_STREAMS)]
    All,
    #[error("{max} event streams are open from {0}, the limit for one client", max = MAX_EVENT_STREAMS_PER_CLIENT)]
    Client(IpAddr),
}

impl EventStreams {
    /// A slot for a stream from `ip`, or why not.
    pub fn take(self: &Arc<Self>, ip: IpAddr) -> Result<StreamSlot, StreamsFull> {
        let mut open = self.open.lock().unwrap_or_else(|e| e.into_inner());
        let (all, per) = &mut *open;
        let mine = per.get(&ip).copied().unwrap_or(0);
        if *all >= MAX_EVENT_STREAMS {
            return Err(StreamsFull::All);
        }
        if mine >= MAX_EVENT_STREAMS_PER_CLIENT {
            return Err(StreamsFull::Client(ip));
        }
        *all += 1;
        per.insert(ip, mine + 1);
        Ok(StreamSlot { streams: self.clone(), ip })
    }

    /// Streams open now, in all.
    pub fn open(&self) -> usize {
        self.open.lock().unwrap_or_else(|e| e.into_inner()).0
    }
}

impl Drop for StreamSlot {
    fn drop(&mut self) {
        let mut open = self.streams.open.lock().unwrap_or_else(|e| e.into_inner());
        let (all, per) = &mut *open;
        *all = all.saturating_sub(1);
        if let Some(n) = per.get_mut(&self.ip) {
            *n -= 1;
            if *n == 0 {
                per.remove(&self.ip);
            }
        }
    }
}

static TRAJECTORY_READS: tokio::sync::Semaphore = tokio::sync::Semaphore::const_new(MAX_TRAJECTORY_READS);

/// An answer that is not the expected JSON.
#[derive(Debug)]
pub struct ApiError(StatusCode, String);

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        (self.0, Json(json!({"error": self.1}))).into_response()
    }
}

impl From<SourceError> for ApiError {
    fn from(e: SourceError) -> Self {
        let code = match e {
            SourceError::NotFound(_) => StatusCode::NOT_FOUND,
            SourceError::Invalid(_) => StatusCode::UNPROCESSABLE_ENTITY,
            SourceError::Unavailable(_) => StatusCode::SERVICE_UNAVAILABLE,
        };
        ApiError(code, e.to_string())
    }
}

fn bad(msg: String) -> ApiError {
    ApiError(StatusCode::BAD_REQUEST, msg)
}

type ApiResult = Result<Json<Value>, ApiError>;

fn parse<T: std::str::FromStr>(what: &str, v: &str) -> Result<T, ApiError>
where
    T::Err: std::fmt::Display,
{
    v.parse().map_err(|e| bad(format!("{what} '{}': {e}", short(v))))
}

pub async fn sweeps(State(src): State<Shared>) -> ApiResult {
    let mut out = Vec::new();
    for s in src.sweeps().await? {
        let records = src.records(&s.id).await?;
        let mut treatments: Vec<(String, u64)> = Vec::new();
        for r in records.iter() {
            match treatments.iter_mut().find(|(n, _)| n == r.treatment()) {
                Some((_, n)) => *n += 1,
                None => treatments.push((r.treatment().to_string(), 1)),
            }
        }
        let treatments: Vec<Value> =
            treatments.into_iter().map(|(name, attempts)| json!({"name": name, "attempts": attempts})).collect();
        out.push(json!({"id": s.id, "live": s.live, "state": s.state, "treatments": treatments}));
    }
    Ok(Json(json!({"sweeps": out, "live": src.changes().is_some()})))
}

#[derive(Deserialize)]
pub struct GridQuery {
    sweep: String,
    treatment: String,
}

/// The records of one treatment.
fn treatment_records<'r>(records: &'r [Record], treatment: &str) -> Vec<&'r Record> {
    records.iter().filter(|r| r.treatment() == treatment).collect()
}

pub async fn grid(State(src): State<Shared>, Query(q): Query<GridQuery>) -> ApiResult {
    let records = src.records(&q.sweep).await?;
    let mine = treatment_records(&records, &q.treatment);
    if mine.is_empty() {
        return Err(ApiError(
            StatusCode::NOT_FOUND,
            format!("sweep '{}' has no records of treatment '{}'", short(&q.sweep), short(&q.treatment)),
        ));
    }
    let mut text = String::new();
    for r in &mine {
        let line = serde_json::to_string(r).map_err(|e| ApiError(StatusCode::INTERNAL_SERVER_ERROR, e.to_string()))?;
        text.push_str(&line);
        text.push('\n');
    }
    let name = std::path::PathBuf::from(format!("sweep {}", q.sweep));
    let set = skillshift_analysis::records::read(text.as_bytes(), &name)
        .map_err(|e| ApiError(StatusCode::UNPROCESSABLE_ENTITY, e.to_string()))?;
    let t = set.select(Some(&q.treatment)).map_err(|e| ApiError(StatusCode::UNPROCESSABLE_ENTITY, e.to_string()))?;
    let a = analyse(t);
    let built = summarise(&a, true).map_err(|e| ApiError(StatusCode::UNPROCESSABLE_ENTITY, e.to_string()))?;
    let s = built.summary;
    let mut cells = Vec::new();
    for &site in Site::ALL {
        for &c in Condition::ALL {
            let st = a.cells.get(site, c);
            let interval = s.intervals.as_ref().and_then(|i| *i.sr.cells.get(site).get(c));
            let mut by_outcome: BTreeMap<&str, u64> =
                [Outcome::Success, Outcome::Failure, Outcome::Timeout, Outcome::Error]
                    .iter()
                    .map(|o| (o.as_str(), 0))
                    .collect();
            for r in mine.iter().filter(|r| r.site == site && r.condition == c) {
                *by_outcome.entry(r.outcome().as_str()).or_default() += 1;
            }
            let ordered: Vec<Value> = failures::ordered(a.failures.get(site).get(c))
                .into_iter()
                .map(|(k, g)| json!({"category": k, "count": g.count, "trajectories": g.trajectories}))
                .collect();
            cells.push(json!({
                "site": site, "condition": c, "SR": st.sr(), "interval": interval,
                "successes": st.successes, "evaluable": st.evaluable, "invalid": st.invalid,
                "attempts": by_outcome, "categories": ordered,
            }));
        }
    }
    let overall = s.metrics.sr.as_ref().and_then(|m| m.overall);
    let overall_interval = s.intervals.as_ref().and_then(|i| i.sr.overall);
    Ok(Json(json!({
        "sweep": q.sweep, "treatment": q.treatment, "live": src.changes().is_some(),
        "sites": Site::ALL, "conditions": Condition::ALL,
        "overall": {"SR": overall, "interval": overall_interval},
        "cells": cells, "notes": built.notes,
    })))
}

#[derive(Deserialize)]
pub struct AttemptsQuery {
    sweep: String,
    treatment: String,
    site: String,
    condition: String,
    outcome: Option<String>,
    category: Option<String>,
}

/// One attempt in a list.
#[derive(Serialize)]
struct Row<'a> {
    uid: String,
    task_id: u32,
    condition: Condition,
    rep: u32,
    attempt: u32,
    outcome: &'static str,
    failure_category: Option<&'a str>,
    steps: Option<u32>,
    skill_calls: Option<u32>,
    skill_failures: Option<u32>,
    duration_ms: Option<u64>,
    error: Option<&'a str>,
    trajectory: bool,
}

fn row(r: &Record) -> Row<'_> {
    Row {
        uid: r.uid.to_string(),
        task_id: r.uid.task_id,
        condition: r.condition,
        rep: r.rep(),
        attempt: r.attempt(),
        outcome: r.outcome().as_str(),
        failure_category: r.failure_category.as_deref(),
        steps: r.steps,
        skill_calls: r.skill_calls,
        skill_failures: r.skill_failures,
        duration_ms: r.duration_ms,
        error: r.error.as_deref(),
        trajectory: r.trajectory.is_some(),
    }
}

/// The category an attempt is grouped under, as `report` groups it.
fn category_of(r: &Record) -> Option<&str> {
    (r.outcome() != Outcome::Success).then(|| r.failure_category.as_deref().unwrap_or(failures::UNRECORDED))
}

pub async fn attempts(State(src): State<Shared>, Query(q): Query<AttemptsQuery>) -> ApiResult {
    let site: Site = parse("site", &q.site)?;
    let condition: Condition = parse("condition", &q.condition)?;
    let outcome = q.outcome.as_deref().filter(|o| !o.is_empty());
    if let Some(o) = outcome {
        if !["success", "failure", "timeout", "error"].contains(&o) {
            return Err(bad(format!("outcome '{}': expected success, failure, timeout or error", short(o))));
        }
    }
    let category = q.category.as_deref().filter(|c| !c.is_empty());
    let records = src.records(&q.sweep).await?;
    let cell: Vec<&Record> =
        records.iter().filter(|r| r.treatment() == q.treatment && r.site == site && r.condition == condition).collect();
    let mut categories: BTreeMap<&str, u64> = BTreeMap::new();
    for r in &cell {
        if let Some(c) = category_of(r) {
            *categories.entry(c).or_default() += 1;
        }
    }
    let mut shown: Vec<&Record> = cell
        .iter()
        .copied()
        .filter(|r| outcome.is_none_or(|o| r.outcome().as_str() == o))
        .filter(|r| category.is_none_or(|c| category_of(r) == Some(c)))
        .collect();
    shown.sort_by_key(|r| (r.uid.task_id, r.rep(), r.attempt()));
    let rows: Vec<Row> = shown.into_iter().map(row).collect();
    Ok(Json(json!({
        "sweep": q.sweep, "treatment": q.treatment, "site": site, "condition": condition,
        "total": cell.len(), "categories": categories, "attempts": rows,
    })))
}

#[derive(Deserialize)]
pub struct AttemptQuery {
    sweep: String,
    treatment: String,
    uid: String,
    condition: String,
    rep: u32,
    attempt: u32,
    /// The index of the first step to answer (0-based).
    from: Option<usize>,
}

/// `s` cut to at most `max` bytes (at a character boundary), with a note saying how much was cut.
fn clip_field(s: &mut String, max: usize) {
    if s.len() <= max {
        return;
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    let cut = s.len() - end;
    s.truncate(end);
    s.push_str(&format!("\n[{cut} more bytes not shown: the viewer shows {max} bytes of one field]"));
}

fn clip_strings(v: &mut Value) {
    match v {
        Value::String(s) => clip_field(s, MAX_FIELD_BYTES),
        Value::Array(a) => a.iter_mut().for_each(clip_strings),
        Value::Object(o) => o.values_mut().for_each(clip_strings),
        _ => {}
    }
}

/// One page of a trajectory's steps ([`page_of`]).
pub struct Page {
    /// Each step as JSON, its strings clipped.
    pub steps: Vec<Value>,
    /// Per step, the observation lines its perturbations touched.
    pub marks: Vec<Vec<usize>>,
    /// Per step, the failing sub-step of its skill.
    pub failed: Vec<Option<usize>>,
    /// The next page's first step index, if any.
    pub next: Option<usize>,
}

/// One page of steps: from index `from`, each as JSON with its strings
/// clipped, while their JSON stays within [`MAX_PAGE_BYTES`] (a step alone past
/// it becomes a note, so a page always moves on).
pub fn page_of(t: &Trajectory, from: usize) -> Page {
    let mut page = Page { steps: Vec::new(), marks: Vec::new(), failed: Vec::new(), next: None };
    let mut used = 0usize;
    for (i, s) in t.steps.iter().enumerate().skip(from) {
        let mut v = serde_json::to_value(s).unwrap_or_else(|e| json!({"step": s.step, "error": e.to_string()}));
        clip_strings(&mut v);
        let mut len = serde_json::to_vec(&v).map_or(0, |b| b.len());
        if len > MAX_PAGE_BYTES {
            v = json!({"step": s.step, "url": "", "title": "", "observation": format!(
                "[step {} is {len} bytes of JSON, past the {MAX_PAGE_BYTES} bytes the viewer answers at once]", s.step
            ), "perturbations": [], "duration_ms": s.duration_ms, "screenshot": null});
            len = 256;
        }
        if !page.steps.is_empty() && used + len > MAX_PAGE_BYTES {
            page.next = Some(i);
            return page;
        }
        used += len;
        page.steps.push(v);
        page.marks.push(perturbed_lines(&s.observation, &s.perturbations));
        page.failed.push(s.skill.as_ref().and_then(|k| k.failed_step()));
    }
    page
}

/// One attempt for the page: its record, one page of its trajectory's steps
/// from `from` and, per step, the observation lines to mark and the failing
/// sub-step of a skill.
async fn attempt_view(src: &Shared, sweep: &str, r: &Record, from: usize) -> Result<Value, ApiError> {
    let read = TRAJECTORY_READS
        .acquire()
        .await
        .map_err(|_| ApiError(StatusCode::SERVICE_UNAVAILABLE, "the viewer is stopping".into()))?;
    let t: Option<Trajectory> = src.trajectory(sweep, r).await?;
    let mut view = json!({
        "record": r, "category": category_of(r), "trajectory": null, "marks": [], "failed_substep": [],
        "site": r.site, "task_id": r.uid.task_id, "steps_total": 0, "steps_from": from, "steps_next": null,
        "network": null,
    });
    if let Some(mut t) = t {
        let page = page_of(&t, from);
        let total = t.steps.len();
        // The network panel's rows of the page's steps (and, on the first page, of the start); the
        // trace itself stays here.
        if let Some(har) = t.network.take() {
            let steps = t.steps.iter().skip(from).take(page.steps.len());
            view["network"] = json!({
                "steps": steps.map(|s| crate::network::step_rows(&har, s.step)).collect::<Vec<_>>(),
                "before": (from == 0).then(|| crate::network::step_rows(&har, 0)),
                "entries": har.log.entries.len(), "dropped": har.log.dropped,
            });
        }
        t.steps.clear();
        let mut tv =
            serde_json::to_value(&t).map_err(|e| ApiError(StatusCode::INTERNAL_SERVER_ERROR, e.to_string()))?;
        clip_strings(&mut tv);
        tv["steps"] = Value::Array(page.steps);
        view["trajectory"] = tv;
        view["marks"] = json!(page.marks);
        view["failed_substep"] = json!(page.failed);
        view["steps_total"] = json!(total);
        view["steps_next"] = json!(page.next);
    }
    drop(read);
    Ok(view)
}

pub async fn attempt(State(src): State<Shared>, Query(q): Query<AttemptQuery>) -> ApiResult {
    let uid: Uid = parse("uid", &q.uid)?;
    let condition: Condition = parse("condition", &q.condition)?;
    let records = src.records(&q.sweep).await?;
    let r = records
        .iter()
        .find(|r| {
            r.treatment() == q.treatment
                && r.uid == uid
                && r.condition == condition
                && r.rep() == q.rep
                && r.attempt() == q.attempt
        })
        .ok_or_else(|| {
            ApiError(
                StatusCode::NOT_FOUND,
                format!(
                    "no attempt {} of {uid} {condition} rep {} of treatment '{}' in sweep '{}'",
                    q.attempt,
                    q.rep,
                    short(&q.treatment),
                    short(&q.sweep)
                ),
            )
        })?;
    Ok(Json(attempt_view(&src, &q.sweep, r, q.from.unwrap_or(0)).await?))
}

#[derive(Deserialize)]
pub struct PairQuery {
    sweep: String,
    site: String,
    task: u32,
    rep: u32,
    lt: String,
    lc: String,
    rt: String,
    rc: String,
}

/// The attempt that stands for a unit: its lowest-numbered non-`error`
/// attempt (the unit outcome), else its last attempt.
pub fn unit_attempt<'r>(
    records: &'r [Record],
    treatment: &str,
    site: Site,
    task: u32,
    condition: Condition,
    rep: u32,
) -> Option<&'r Record> {
    let mut unit: Vec<&Record> = records
        .iter()
        .filter(|r| {
            r.treatment() == treatment
                && r.site == site
                && r.uid.task_id == task
                && r.condition == condition
                && r.rep() == rep
        })
        .collect();
    unit.sort_by_key(|r| r.attempt());
    unit.iter().find(|r| r.outcome() != Outcome::Error).or(unit.last()).copied()
}

pub async fn pair(State(src): State<Shared>, Query(q): Query<PairQuery>) -> ApiResult {
    let site: Site = parse("site", &q.site)?;
    let lc: Condition = parse("condition", &q.lc)?;
    let rc: Condition = parse("condition", &q.rc)?;
    let records = src.records(&q.sweep).await?;
    let mut sides = Vec::new();
    for (t, c) in [(&q.lt, lc), (&q.rt, rc)] {
        let side = match unit_attempt(&records, t, site, q.task, c, q.rep) {
            Some(r) => attempt_view(&src, &q.sweep, r, 0).await?,
            None => json!({"missing": format!(
                "no attempt of {site} task {} {c} rep {} in treatment '{}'", q.task, q.rep, short(t)
            )}),
        };
        sides.push(json!({"treatment": t, "condition": c, "view": side}));
    }
    Ok(Json(json!({"sweep": q.sweep, "site": site, "task_id": q.task, "rep": q.rep, "sides": sides})))
}

#[derive(Deserialize)]
pub struct ShotQuery {
    sweep: String,
    sha: String,
}

pub async fn screenshot(State(src): State<Shared>, Query(q): Query<ShotQuery>) -> Result<Response, ApiError> {
    let png = src.screenshot(&q.sweep, &q.sha).await?;
    Ok(([(header::CONTENT_TYPE, "image/png"), (header::CACHE_CONTROL, "max-age=86400, immutable")], png)
        .into_response())
}

pub async fn events(
    State(src): State<Shared>,
    Extension(streams): Extension<Arc<EventStreams>>,
    req: axum::extract::Request,
) -> Response {
    let Some(rx) = src.changes() else {
        return StatusCode::NO_CONTENT.into_response();
    };
    let ip = skillshift_http::peer(&req).map_or(IpAddr::from([0, 0, 0, 0]), |a| a.ip());
    let slot = match streams.take(ip) {
        Ok(slot) => slot,
        Err(why) => return ApiError(StatusCode::TOO_MANY_REQUESTS, why.to_string()).into_response(),
    };
    let stream = tokio_stream::wrappers::BroadcastStream::new(rx).map(move |m| {
        // The slot lives as long as the stream.
        let _ = &slot;
        // A lagging reader missed some: an empty id asks the page to refresh whatever it shows.
        let id = m.unwrap_or_default();
        Ok::<Event, Infallible>(Event::default().event("sweep").data(id))
    });
    Sse::new(stream).keep_alive(KeepAlive::default()).into_response()
}
