//! The attempt's network trace: DevTools' `Network.*` events of every tab of the attempt, folded
//! into HAR 1.2 entries ([`skillshift_common::har`]) as they arrive.
//!
//! The DevTools reader (the `cdp` module) hands each `Network.*` event of a recorded session to a
//! [`Recorder`] at once, without a channel that could drop it under load; [`Recorder::event`] is
//! pure bookkeeping and never waits. What needs a call into the page (a request's post data when
//! the event left it out, a response's body) is listed by [`Recorder::wanted`]; the reader asks
//! for it at once (a body is gone once its page navigates away) and fills in the answer
//! ([`Recorder::answered`]); what it could not send, the session asks for between steps.
//!
//! * One entry per request and per redirect hop: a redirect arrives as `redirectResponse` on the
//!   next `requestWillBeSent` of the same `requestId`, and closes the hop before it.
//! * Headers are the ones sent and received on the wire when DevTools report them
//!   (`requestWillBeSentExtraInfo`, `responseReceivedExtraInfo`: `Cookie`, `Set-Cookie`,
//!   `sec-fetch-*`), else those of `requestWillBeSent` / `responseReceived`.
//! * Bounded: at most [`MAX_ENTRIES`] entries and [`MAX_TOTAL`] bytes of entries (URLs, headers,
//!   post data, bodies); past either, later requests are only counted (`_dropped`). Post data and
//!   bodies keep at most [`MAX_BODY`] bytes each (`_truncated`). Bodies are read only when the
//!   attempt asks for them, and never for static assets.
//! * Each entry names its tab (`_tab`, in the order the attempt's tabs were first recorded) and
//!   the agent step during which it was sent (`_step`, 1-based; 0 before the first step).

use std::collections::HashMap;

use serde_json::Value;
use skillshift_common::har::{Content, Entry, Har, Log, NameValue, PostData, Request, Response};

mod har;
use har::{
    clip, header, headers_of, prefix, query_of, request_cookies, resolve, response_cookies, rfc3339, size_of, str_of,
};

/// Entries kept per attempt; later requests are counted in `_dropped`.
pub const MAX_ENTRIES: usize = 2_000;
/// Bytes of post data, and of a response body, kept per entry.
pub const MAX_BODY: usize = 64 * 1024;
/// Bytes of all entries together (URLs, headers, post data, bodies).
pub const MAX_TOTAL: usize = 4 * 1024 * 1024;
/// Requests in flight tracked at once (a page that never finishes its requests cannot grow the map).
const MAX_IN_FLIGHT: usize = 4_096;

/// The events a [`Recorder`] folds (the reader reads no other `Network.*` event's parameters).
pub const FOLDED: &[&str] = &[
    "Network.requestWillBeSent",
    "Network.requestWillBeSentExtraInfo",
    "Network.responseReceived",
    "Network.responseReceivedExtraInfo",
    "Network.loadingFinished",
    "Network.loadingFailed",
];

/// DevTools' resource types of static assets: kept in the trace, never with their bodies.
pub const STATIC_TYPES: &[&str] = &["Image", "Stylesheet", "Font", "Media", "Script", "Manifest", "TextTrack"];

/// A call the session makes to complete an entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Wanted {
    /// `Network.getRequestPostData` of `request` on `session`.
    PostData { index: usize, session: String, request: String },
    /// `Network.getResponseBody` of `request` on `session`.
    Body { index: usize, session: String, request: String },
}

/// An entry under way: where it is in the trace and what is still to come.
struct Flight {
    index: usize,
    session: String,
    started: f64,
}

/// The trace of one attempt as its events arrive.
#[derive(Default)]
pub struct Recorder {
    /// Whether new requests are recorded (false once the attempt's agent is done).
    open: bool,
    bodies: bool,
    step: u32,
    /// Recorded DevTools sessions -> their tab number.
    sessions: HashMap<String, u32>,
    tabs: u32,
    entries: Vec<Entry>,
    /// Per entry: bytes counted against [`MAX_TOTAL`].
    sizes: Vec<usize>,
    /// Post data and bodies still to be read (at most one of each per entry).
    wanted: Vec<Wanted>,
    total: usize,
    dropped: u64,
    /// `requestId` -> the hop under way.
    flights: HashMap<String, Flight>,
    /// Wire headers that arrived before their request's event, by `requestId`, oldest first.
    early_request_headers: HashMap<String, Vec<Vec<NameValue>>>,
    /// ... and of responses, with the status they came with: a redirect's may come before or after
    /// the next hop's request, so they are matched to their hop by status.
    early_response_headers: HashMap<String, Vec<(i64, Vec<NameValue>)>>,
    /// `requestId` -> its hops' entries, oldest first.
    hops: HashMap<String, Vec<usize>>,
    /// Per entry: its response's wire headers are in.
    wire_response: Vec<bool>,
    /// Per entry: its request's wire headers are in, or none will come (a redirect served from a cache).
    wire_request: Vec<bool>,
}

impl Recorder {
    /// Starts a trace: new requests are recorded from now on, bodies read when `bodies`.
    pub fn start(bodies: bool) -> Recorder {
        Recorder { open: true, bodies, ..Recorder::default() }
    }

    /// Records the events of `session` (one of the attempt's tabs) from now on.
    pub fn add_session(&mut self, session: &str) {
        if !self.sessions.contains_key(session) {
            self.sessions.insert(session.to_string(), self.tabs);
            self.tabs += 1;
        }
    }

    /// True once a tab's requests are recorded (until [`Recorder::take`]).
    pub fn is_recording(&self) -> bool {
        !self.sessions.is_empty()
    }

    pub fn records(&self, session: &str) -> bool {
        self.sessions.contains_key(session)
    }

    /// The agent step requests are sent in from now on (1-based).
    pub fn set_step(&mut self, step: u32) {
        self.step = step;
    }

    /// No new request is recorded from now on (those under way still get their responses).
    pub fn close(&mut self) {
        self.open = false;
    }

    /// Folds one `Network.*` event of `session` into the trace.
    pub fn event(&mut self, session: &str, method: &str, p: &Value) {
        let Some(&tab) = self.sessions.get(session) else { return };
        let id = str_of(p, "requestId");
        match method {
            "Network.requestWillBeSent" => {
                if let Some(redirect) = p.get("redirectResponse") {
                    if let Some(f) = self.flights.remove(&id) {
                        // A redirect a cache answered sent nothing on the wire: no wire headers will come for it.
                        if redirect.get("fromDiskCache").and_then(Value::as_bool) == Some(true) {
                            self.wire_request[f.index] = true;
                        }
                        self.respond(f.index, redirect);
                        self.early_response(&id, f.index);
                        self.finish(&f, p);
                    }
                }
                if self.open {
                    self.request(session, tab, &id, p);
                }
            }
            "Network.requestWillBeSentExtraInfo" => {
                let headers = headers_of(p.get("headers"));
                // A request's hops (a redirect chain shares its `requestId`) are sent one after another, so
                // their wire headers come in hop order; the next hop's event may come first, so these are the
                // oldest hop's still without them, not the hop under way.
                let hop = self.hops.get(&id).and_then(|hops| hops.iter().copied().find(|&i| !self.wire_request[i]));
                match hop {
                    Some(index) => {
                        self.wire_request[index] = true;
                        let e = &mut self.entries[index];
                        e.request.cookies = request_cookies(&headers);
                        if let Some(d) = e.request.post_data.as_mut().filter(|d| d.mime_type.is_empty()) {
                            d.mime_type = header(&headers, "content-type").unwrap_or_default();
                        }
                        e.request.headers = headers;
                        self.recount(index);
                    }
                    None => {
                        if self.early_request_headers.len() < MAX_IN_FLIGHT {
                            let waiting = self.early_request_headers.entry(id).or_default();
                            if waiting.len() < 32 {
                                waiting.push(headers);
                            }
                        }
                    }
                }
            }
            "Network.responseReceived" => {
                if let Some(f) = self.flights.get(&id) {
                    let index = f.index;
                    if let Some(r) = p.get("response") {
                        self.respond(index, r);
                    }
                    if let Some(t) = p.get("type").and_then(Value::as_str) {
                        self.entries[index].resource_type = Some(t.to_string());
                    }
                    self.early_response(&id, index);
                }
            }
            "Network.responseReceivedExtraInfo" => {
                let headers = headers_of(p.get("headers"));
                let status = p.get("statusCode").and_then(Value::as_i64).unwrap_or(0);
                let hop = self.hops.get(&id).and_then(|hops| {
                    hops.iter().copied().find(|&i| !self.wire_response[i] && self.entries[i].response.status == status)
                });
                match hop {
                    Some(index) if status != 0 => self.wire_response_headers(index, headers),
                    _ => {
                        if self.early_response_headers.len() < MAX_IN_FLIGHT {
                            let waiting = self.early_response_headers.entry(id).or_default();
                            if waiting.len() < 32 {
                                waiting.push((status, headers));
                            }
                        }
                    }
                }
            }
            "Network.loadingFinished" => {
                if let Some(f) = self.flights.remove(&id) {
                    let e = &mut self.entries[f.index];
                    if let Some(n) = p.get("encodedDataLength").and_then(Value::as_f64) {
                        e.response.body_size = n as i64;
                    }
                    let wants_body = self.bodies
                        && !e.resource_type.as_deref().is_some_and(|t| STATIC_TYPES.contains(&t))
                        && e.response.redirect_url.is_empty();
                    if wants_body {
                        self.wanted.push(Wanted::Body {
                            index: f.index,
                            session: f.session.clone(),
                            request: id.clone(),
                        });
                    }
                    self.finish(&f, p);
                }
            }
            "Network.loadingFailed" => {
                if let Some(f) = self.flights.remove(&id) {
                    let e = &mut self.entries[f.index];
                    if e.response.status == 0 {
                        e.response.status_text = str_of(p, "errorText");
                    }
                    self.finish(&f, p);
                }
            }
            _ => {}
        }
    }

    fn request(&mut self, session: &str, tab: u32, id: &str, p: &Value) {
        let Some(r) = p.get("request") else { return };
        let url = str_of(r, "url");
        let mut headers = headers_of(r.get("headers"));
        let early = match self.early_request_headers.get_mut(id) {
            Some(waiting) if !waiting.is_empty() => {
                let first = waiting.remove(0);
                if waiting.is_empty() {
                    self.early_request_headers.remove(id);
                }
                Some(first)
            }
            _ => None,
        };
        let wire = early.is_some();
        if let Some(h) = early {
            headers = h;
        }
        let post_text = r.get("postData").and_then(Value::as_str);
        let has_post = r.get("hasPostData").and_then(Value::as_bool).unwrap_or(false) || post_text.is_some();
        let mime = headers
            .iter()
            .find(|h| h.name.eq_ignore_ascii_case("content-type"))
            .map(|h| h.value.clone())
            .unwrap_or_default();
        let post_data = has_post.then(|| {
            let (text, truncated) = clip(post_text.unwrap_or_default());
            PostData { mime_type: mime, text, truncated }
        });
        let entry = Entry {
            started_date_time: rfc3339(p.get("wallTime").and_then(Value::as_f64)),
            time: -1.0,
            request: Request {
                method: str_of(r, "method"),
                query_string: query_of(&url),
                url,
                http_version: "HTTP/1.1".into(),
                cookies: request_cookies(&headers),
                headers,
                body_size: post_data.as_ref().map_or(0, |d| d.text.len() as i64),
                post_data,
                headers_size: -1,
            },
            response: Response {
                status: 0,
                status_text: String::new(),
                http_version: "HTTP/1.1".into(),
                headers: Vec::new(),
                cookies: Vec::new(),
                content: Content::default(),
                redirect_url: String::new(),
                headers_size: -1,
                body_size: -1,
            },
            tab: Some(tab),
            resource_type: p.get("type").and_then(Value::as_str).map(str::to_string),
            step: Some(self.step),
        };
        let size = size_of(&entry);
        if self.entries.len() >= MAX_ENTRIES || self.total + size > MAX_TOTAL || self.flights.len() >= MAX_IN_FLIGHT {
            self.dropped += 1;
            return;
        }
        let index = self.entries.len();
        self.total += size;
        self.sizes.push(size);
        self.wire_response.push(false);
        self.wire_request.push(wire);
        let hops = self.hops.entry(id.to_string()).or_default();
        if hops.len() < 64 {
            hops.push(index);
        }
        if has_post && post_text.is_none() {
            self.wanted.push(Wanted::PostData { index, session: session.to_string(), request: id.to_string() });
        }
        self.entries.push(entry);
        let started = p.get("timestamp").and_then(Value::as_f64).unwrap_or(0.0);
        self.flights.insert(id.to_string(), Flight { index, session: session.to_string(), started });
    }

    /// Fills entry `index`'s response from a DevTools `Response`.
    fn respond(&mut self, index: usize, r: &Value) {
        let e = &mut self.entries[index];
        e.response.status = r.get("status").and_then(Value::as_i64).unwrap_or(0);
        e.response.status_text = str_of(r, "statusText");
        if let Some(proto) = r.get("protocol").and_then(Value::as_str) {
            e.response.http_version = proto.to_ascii_uppercase();
            e.request.http_version = e.response.http_version.clone();
        }
        if e.response.headers.is_empty() {
            e.response.headers = headers_of(r.get("headers"));
            e.response.cookies = response_cookies(&e.response.headers);
        }
        if let Some(location) = header(&e.response.headers, "location") {
            if (300..400).contains(&e.response.status) {
                e.response.redirect_url = resolve(&e.request.url, &location);
            }
        }
        e.response.content.mime_type = str_of(r, "mimeType");
        self.recount(index);
    }

    /// Puts in the wire headers that came before entry `index`'s response, when they are its (same status).
    fn early_response(&mut self, id: &str, index: usize) {
        let status = self.entries[index].response.status;
        let Some(waiting) = self.early_response_headers.get_mut(id) else { return };
        let Some(at) = waiting.iter().position(|(s, _)| *s == status) else { return };
        let (_, headers) = waiting.remove(at);
        if waiting.is_empty() {
            self.early_response_headers.remove(id);
        }
        self.wire_response_headers(index, headers);
    }

    fn wire_response_headers(&mut self, index: usize, headers: Vec<NameValue>) {
        self.wire_response[index] = true;
        let e = &mut self.entries[index];
        e.response.cookies = response_cookies(&headers);
        e.response.headers = headers;
        self.recount(index);
    }

    fn finish(&mut self, f: &Flight, p: &Value) {
        if let Some(t) = p.get("timestamp").and_then(Value::as_f64) {
            if f.started > 0.0 && t >= f.started {
                self.entries[f.index].time = ((t - f.started) * 1000.0 * 1000.0).round() / 1000.0;
            }
        }
    }

    /// Re-counts entry `index` against [`MAX_TOTAL`] after it grew.
    fn recount(&mut self, index: usize) {
        let size = size_of(&self.entries[index]);
        self.total = self.total.saturating_sub(self.sizes[index]) + size;
        self.sizes[index] = size;
    }

    /// A mark in the trace: the requests sent after it are the ones [`Recorder::fetches_in_flight`]
    /// counts.
    pub fn mark(&self) -> usize {
        self.entries.len()
    }

    /// The page's own requests (`fetch` and `XMLHttpRequest`) sent since `since` ([`Recorder::mark`])
    /// that have not ended yet: a save the block editor sends when "Update" is clicked, the classic
    /// editor's autosave. Documents, frames and assets are not counted.
    pub fn fetches_in_flight(&self, since: usize) -> usize {
        self.flights
            .values()
            .filter(|f| {
                f.index >= since
                    && self.entries[f.index].resource_type.as_deref().is_some_and(|t| t == "XHR" || t == "Fetch")
            })
            .count()
    }

    /// The post data and bodies still to be read, and forgets them (each is asked for once).
    pub fn wanted(&mut self) -> Vec<Wanted> {
        std::mem::take(&mut self.wanted)
    }

    /// Asks again for what could not be asked for yet.
    pub fn want_again(&mut self, w: Wanted) {
        self.wanted.push(w);
    }

    /// Fills in the answer to a [`Wanted`] call (`postData`, or `body` and `base64Encoded`).
    pub fn answered(&mut self, w: &Wanted, answer: &Value) {
        let text = |k: &str| answer.get(k).and_then(Value::as_str).unwrap_or_default();
        match *w {
            Wanted::PostData { index, .. } => self.post_data(index, text("postData")),
            Wanted::Body { index, .. } => {
                let b64 = answer.get("base64Encoded").and_then(Value::as_bool).unwrap_or(false);
                self.body(index, text("body"), b64)
            }
        }
    }

    /// Entry `index`'s post data, as `Network.getRequestPostData` returned it.
    pub fn post_data(&mut self, index: usize, text: &str) {
        let room = MAX_TOTAL.saturating_sub(self.total);
        let Some(d) = self.entries.get_mut(index).and_then(|e| e.request.post_data.as_mut()) else { return };
        let (mut kept, mut truncated) = clip(text);
        if kept.len() > room {
            kept = prefix(&kept, room).to_string();
            truncated = true;
        }
        d.text = kept;
        d.truncated = truncated;
        self.entries[index].request.body_size = text.len() as i64;
        self.recount(index);
    }

    /// Entry `index`'s response body, as `Network.getResponseBody` returned it (base64 bodies are
    /// kept as they came, with `encoding`).
    pub fn body(&mut self, index: usize, text: &str, base64: bool) {
        let room = MAX_TOTAL.saturating_sub(self.total);
        let Some(e) = self.entries.get_mut(index) else { return };
        let (mut kept, mut truncated) = clip(text);
        if kept.len() > room {
            kept = prefix(&kept, room).to_string();
            truncated = true;
        }
        e.response.content.size = text.len() as i64;
        e.response.content.text = Some(kept);
        e.response.content.truncated = truncated;
        e.response.content.encoding = base64.then(|| "base64".to_string());
        self.recount(index);
    }

    #[cfg(test)]
    fn take_is_open(&self) -> bool {
        self.dropped == 0
    }

    /// Entries so far.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The trace as HAR; the recorder is left empty and closed.
    pub fn take(&mut self) -> Har {
        let done = std::mem::take(self);
        Har { log: Log { entries: done.entries, dropped: done.dropped, ..Log::default() } }
    }
}

#[cfg(test)]
mod tests;
