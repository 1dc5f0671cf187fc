//! The gRPC services: the Worker service (register + the session stream) and
//! the Control service. They convert wire messages at once, hand them to the
//! engine's input channel and turn the engine's answers back into messages.
//! Malformed messages get an `invalid_argument` status (or, for one record, a
//! `reject` naming the attempt) and never reach the store. Every failure is a
//! [`ServiceError`], which [`crate::service_error`] maps to its status code.
//!
//! Bounds at the edge (`crate::limits`): a session must say hello within the
//! hello timeout; sessions, status watches and exports open at once are
//! counted by semaphores and refused with `resource_exhausted` past the
//! limit; a record past the record limit is measured, not converted, and
//! refused by the engine with a reject. A trajectory upload is checked with the
//! engine before its first chunk is kept and again, by the whole blob's
//! digest, before it is inflated ([`upload_chunk`]); decodes wait for one of
//! `Limits::max_concurrent_decodes` permits.

use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use futures::Stream;
use prost::Message;
use skillshift_common::ids::{AttemptKey, SweepId};
use skillshift_proto::convert::{self, WireError};
use skillshift_proto::v1::{self, control_server::Control, worker_server::Worker};
use skillshift_taskcenter::TaskCenter;
use tokio::sync::{mpsc, oneshot, OwnedSemaphorePermit, Semaphore};
use tokio_stream::wrappers::ReceiverStream;
use tonic::{Request, Response, Status, Streaming};

use crate::engine::{Conn, ControlCmd, IngestError, Input, Outbound, Upload, WorkerEvent};
use crate::limits::Limits;
use crate::service_error::ServiceError;
use crate::store::Store;
use crate::upload::{self, Chunked, Uploads};
use crate::wire;

/// Capacity of one worker session's outbound queue. A worker that lets it
/// fill up is cut off (its leases are released), never waited for.
pub const OUTBOUND_CAPACITY: usize = 4096;

/// A cheap handle on the engine's input channel.
#[derive(Clone)]
pub struct Handle {
    tx: mpsc::Sender<Input>,
    conns: Arc<AtomicU64>,
    ttl: Duration,
    heartbeat: Duration,
}

fn unavailable() -> Status {
    ServiceError::ShuttingDown.into()
}

/// One of `permits`, or `resource_exhausted` naming what is at its limit.
fn permit(permits: &Arc<Semaphore>, what: &'static str, limit: usize) -> Result<OwnedSemaphorePermit, ServiceError> {
    permits.clone().try_acquire_owned().map_err(|_| ServiceError::AtLimit { what, limit })
}

/// The longest sweep id an attempt reference may carry (ids are `sw-` and 12 hex digits).
const MAX_SWEEP_ID_BYTES: usize = 128;

fn attempt_key(r: Option<v1::AttemptRef>) -> Result<AttemptKey, ServiceError> {
    let key = convert::attempt_key_from_wire(r)?;
    if key.sweep.as_str().len() > MAX_SWEEP_ID_BYTES {
        return Err(ServiceError::Invalid(format!(
            "attempt.sweep is {} bytes; a sweep id has at most {MAX_SWEEP_ID_BYTES}",
            key.sweep.as_str().len()
        )));
    }
    Ok(key)
}

impl Handle {
    pub fn new(tx: mpsc::Sender<Input>, ttl: Duration, heartbeat: Duration) -> Handle {
        Handle { tx, conns: Arc::new(AtomicU64::new(0)), ttl, heartbeat }
    }

    pub async fn send(&self, input: Input) -> Result<(), Status> {
        self.tx.send(input).await.map_err(|_| unavailable())
    }

    /// Asks the engine whether `worker` may upload a trajectory for `key` ([`Input::UploadCheck`]).
    /// `Err` when the engine is gone.
    pub async fn upload_check(
        &self,
        worker: &str,
        key: &AttemptKey,
        blob: Option<u64>,
    ) -> Result<Result<Upload, IngestError>, Status> {
        let (reply, rx) = oneshot::channel();
        self.send(Input::UploadCheck { worker: worker.to_string(), key: key.clone(), blob, reply }).await?;
        rx.await.map_err(|_| unavailable())
    }

    pub async fn ask<T>(&self, make: impl FnOnce(oneshot::Sender<T>) -> ControlCmd) -> Result<T, Status> {
        let (tx, rx) = oneshot::channel();
        self.send(Input::Control(make(tx))).await?;
        rx.await.map_err(|_| unavailable())
    }
}

pub struct WorkerService {
    pub handle: Handle,
    /// Owns each session's reader (a child centre per session).
    pub tasks: TaskCenter,
    pub limits: Limits,
    /// One per open session, from its first byte to its end.
    pub sessions: Arc<Semaphore>,
    /// One per trajectory blob being decoded (`Limits::max_concurrent_decodes`).
    pub decodes: Arc<Semaphore>,
    /// Read to find trajectories stored before blobs had their digest kept.
    pub store: Store,
}

type BoxStream<T> = Pin<Box<dyn Stream<Item = Result<T, Status>> + Send + 'static>>;

fn outbound_to_wire(o: Outbound) -> Result<v1::CoordinatorMessage, Status> {
    use v1::coordinator_message::Body;
    let body = match o {
        Outbound::Assign(key, spec) => Body::Assign(convert::assignment_to_wire(&key, &spec)),
        Outbound::Cancel(key) => Body::Cancel((&key).into()),
        Outbound::Drain(reason) => Body::Drain(v1::Drain { reason }),
        Outbound::Ack(keys) => Body::Ack(v1::Ack { attempts: keys.iter().map(Into::into).collect() }),
        Outbound::Reject(key, reason) => Body::Reject(v1::Reject { attempt: Some((&key).into()), reason }),
        Outbound::TrajectoryAck(key) => Body::TrajectoryAck(v1::TrajectoryAck { attempt: Some((&key).into()) }),
        Outbound::TrajectoryReject(key, reason, too_large) => {
            Body::TrajectoryReject(v1::TrajectoryReject { attempt: Some((&key).into()), reason, too_large })
        }
        Outbound::Fatal(message) => return Err(ServiceError::Invalid(message).into()),
    };
    Ok(v1::CoordinatorMessage { body: Some(body) })
}

fn keys(refs: Vec<v1::AttemptRef>) -> Vec<AttemptKey> {
    refs.into_iter().filter_map(|r| attempt_key(Some(r)).ok()).collect()
}

/// Converts one inbound message. `Err` ends the session; `Ok(Err(reject))`
/// refuses one attempt's message. A record of more than `max_record_bytes`
/// is not converted: the engine refuses it by its size.
fn inbound(
    msg: v1::WorkerMessage,
    max_record_bytes: usize,
) -> Result<Result<WorkerEvent, (AttemptKey, String)>, ServiceError> {
    use v1::worker_message::Body;
    let invalid = |m: &str| ServiceError::Invalid(m.to_string());
    let body = msg.body.ok_or_else(|| invalid("empty worker message (no body)"))?;
    Ok(Ok(match body {
        Body::Hello(_) => return Err(invalid("hello sent twice in one session")),
        Body::Ready(r) => WorkerEvent::Ready(r.credits),
        Body::Heartbeat(h) => WorkerEvent::Heartbeat {
            running: keys(h.running),
            // One line, bounded, whatever the worker sent.
            unavailable: h.unavailable.as_deref().map(skillshift_common::record::error_detail),
        },
        Body::Progress(p) => WorkerEvent::Progress(attempt_key(p.attempt)?),
        Body::AckRequest(a) => WorkerEvent::AckRequest(keys(a.attempts)),
        Body::TrajectoryChunk(_) => {
            return Err(ServiceError::Internal("a trajectory chunk reached the record converter".into()))
        }
        Body::Record(r) => {
            let key = attempt_key(r.attempt.clone())?;
            let bytes = r.encoded_len();
            if bytes > max_record_bytes {
                return Ok(Ok(WorkerEvent::RecordTooLarge(key, bytes)));
            }
            let Some(record) = r.record else {
                return Ok(Err((key, "record message without a record".into())));
            };
            match skillshift_common::Record::try_from(record) {
                Ok(rec) => WorkerEvent::Record(key, Box::new(rec)),
                Err(e) => return Ok(Err((key, e.to_string()))),
            }
        }
    }))
}

#[tonic::async_trait]
impl Worker for WorkerService {
    async fn register(&self, req: Request<v1::RegisterRequest>) -> Result<Response<v1::RegisterReply>, Status> {
        let r = req.into_inner();
        let hosts = r
            .hosts
            .iter()
            .map(convert::site_version_from_wire)
            .collect::<Result<Vec<_>, WireError>>()
            .map_err(ServiceError::from)?;
        if hosts.is_empty() {
            return Err(ServiceError::Invalid("a worker must host at least one site version".into()).into());
        }
        if r.slots == 0 || r.slots > 1024 {
            return Err(ServiceError::Invalid(format!("slots {} is not in 1..=1024", r.slots)).into());
        }
        let (tx, rx) = oneshot::channel();
        let previous = Some(r.previous_id).filter(|p| !p.is_empty());
        self.handle
            .send(Input::Register { name: r.name, hosts, simulated: r.simulated, slots: r.slots, previous, reply: tx })
            .await?;
        let worker_id = rx.await.map_err(|_| unavailable())??;
        Ok(Response::new(v1::RegisterReply {
            worker_id,
            lease_ttl_ms: self.handle.ttl.as_millis() as u64,
            heartbeat_ms: self.handle.heartbeat.as_millis() as u64,
        }))
    }

    type SessionStream = BoxStream<v1::CoordinatorMessage>;

    async fn session(
        &self,
        req: Request<Streaming<v1::WorkerMessage>>,
    ) -> Result<Response<Self::SessionStream>, Status> {
        // Counted from the first byte: a stream that never says hello holds a permit until the timeout.
        let permit = permit(&self.sessions, "worker sessions", self.limits.max_sessions)?;
        let mut stream = req.into_inner();
        let wait = self.limits.hello_timeout;
        let first = tokio::time::timeout(wait, stream.message())
            .await
            .map_err(|_| ServiceError::NoHello(wait))??
            .ok_or_else(|| ServiceError::Invalid("session closed before hello".into()))?;
        let Some(v1::worker_message::Body::Hello(hello)) = first.body else {
            return Err(ServiceError::Invalid("the first message of a session must be hello".into()).into());
        };
        if hello.worker_id.is_empty() {
            return Err(ServiceError::Invalid("hello without a worker id: register first".into()).into());
        }
        let conn_id = self.handle.conns.fetch_add(1, Ordering::Relaxed) + 1;
        let (tx, rx) = mpsc::channel(OUTBOUND_CAPACITY);
        // The engine holds the only strong sender: when it drops the session
        // (replaced, cut off, shutdown) the outbound stream ends.
        let weak = tx.downgrade();
        let conn = Conn { id: conn_id, tx };
        let running = keys(hello.running);
        let (reply, answer) = oneshot::channel();
        let credential = hello.worker_id;
        self.handle.send(Input::Connect { credential, conn, running, free_slots: hello.free_slots, reply }).await?;
        // Only a session whose hello proved its worker's identity gets a reader.
        let worker = answer.await.map_err(|_| unavailable())??;
        let max_record_bytes = self.limits.max_record_bytes;
        let handle = self.handle.clone();
        let session = self.tasks.child(format!("worker {worker} session {conn_id}"));
        let mut uploads = Uploads::new(self.limits.max_trajectory_bytes);
        let decoder = session.clone();
        let (store, decodes) = (self.store.clone(), self.decodes.clone());
        session.spawn("session-reader", move |token| async move {
            let _permit = permit;
            loop {
                let next = tokio::select! {
                    // Serving stops (coordinator shutdown): not a worker loss, so no
                    // disconnect; the worker's leases stay for when it reconnects.
                    _ = token.cancelled() => return,
                    next = stream.message() => next,
                };
                let msg = match next {
                    Ok(Some(m)) => m,
                    Ok(None) => break,
                    Err(e) => {
                        tracing::debug!(worker = %worker, error = %e, "worker stream broke");
                        break;
                    }
                };
                if let Some(v1::worker_message::Body::TrajectoryChunk(chunk)) = msg.body {
                    let event =
                        match upload_chunk(&handle, &store, &decodes, &decoder, &worker, &mut uploads, chunk).await {
                            Uploaded::Event(event) => event,
                            Uploaded::Answer(msg) => {
                                if let Some(tx) = weak.upgrade() {
                                    let _ = tx.try_send(msg);
                                }
                                continue;
                            }
                            Uploaded::Nothing => continue,
                            Uploaded::Stop => break,
                        };
                    if handle.send(Input::Worker { worker: worker.clone(), conn: conn_id, event }).await.is_err() {
                        break;
                    }
                    continue;
                }
                match inbound(msg, max_record_bytes) {
                    Ok(Ok(event)) => {
                        if handle.send(Input::Worker { worker: worker.clone(), conn: conn_id, event }).await.is_err() {
                            break;
                        }
                    }
                    Ok(Err((key, reason))) => {
                        tracing::warn!(worker = %worker, %reason, "malformed record refused");
                        if let Some(tx) = weak.upgrade() {
                            let _ = tx.try_send(Outbound::Reject(key, reason));
                        }
                    }
                    Err(error) => {
                        tracing::warn!(worker = %worker, status = %error, "malformed worker message");
                        if let Some(tx) = weak.upgrade() {
                            let _ = tx.try_send(Outbound::Fatal(error.to_string()));
                        }
                        break;
                    }
                }
            }
            let _ = handle.send(Input::Disconnect { worker, conn: conn_id }).await;
        });
        // End the response stream right after a fatal status.
        let out = futures::stream::unfold((rx, false), |(mut rx, ended)| async move {
            if ended {
                return None;
            }
            let item = outbound_to_wire(rx.recv().await?);
            let ended = item.is_err();
            Some((item, (rx, ended)))
        });
        Ok(Response::new(Box::pin(out)))
    }
}

/// What one trajectory chunk came to.
enum Uploaded {
    /// A whole blob, decoded, for the engine to store.
    Event(WorkerEvent),
    /// An answer for the worker now (a refusal, or the ack of a blob the attempt already holds).
    Answer(Outbound),
    Nothing,
    /// The session is ending.
    Stop,
}

/// Takes one trajectory chunk. Nothing of a blob is kept before the engine says the worker holds
/// its attempt, and nothing is inflated before the engine has seen the whole blob's digest (a
/// re-upload of what the attempt holds is acknowledged there, a different one refused); decoding
/// waits for one of `decodes`.
async fn upload_chunk(
    handle: &Handle,
    store: &Store,
    decodes: &Arc<Semaphore>,
    tasks: &TaskCenter,
    worker: &str,
    uploads: &mut Uploads,
    chunk: v1::TrajectoryChunk,
) -> Uploaded {
    let refused = |key: AttemptKey, reason: String, too_large: bool| {
        tracing::warn!(worker = %worker, sweep = %key.sweep, unit = key.unit, attempt = key.attempt, %reason,
            "trajectory refused");
        Uploaded::Answer(Outbound::TrajectoryReject(key, reason, too_large))
    };
    if chunk.offset == 0 {
        if let Ok(key) = attempt_key(chunk.attempt.clone()) {
            match handle.upload_check(worker, &key, None).await {
                Ok(Ok(_)) => {}
                Ok(Err(reason)) => {
                    uploads.refuse(key.clone());
                    return refused(key, reason.to_string(), false);
                }
                Err(_) => return Uploaded::Stop,
            }
        }
    }
    let (key, bytes) = match uploads.push(chunk) {
        Ok(Chunked::More) => return Uploaded::Nothing,
        Ok(Chunked::Whole(key, bytes)) => (key, bytes),
        Ok(Chunked::Refused(key, reason, too_large)) => return refused(key, reason, too_large),
        Err(reason) => {
            tracing::warn!(worker = %worker, %reason, "malformed trajectory chunk ignored");
            return Uploaded::Nothing;
        }
    };
    let sha256 = upload::blob_sha256(&bytes);
    match handle.upload_check(worker, &key, Some(crate::engine::blob_id(&sha256))).await {
        Ok(Ok(Upload::Same)) => return Uploaded::Answer(Outbound::TrajectoryAck(key)),
        Ok(Ok(Upload::New)) => {}
        Ok(Err(reason)) => return refused(key, reason.to_string(), false),
        Err(_) => return Uploaded::Stop,
    }
    // A trajectory stored before blobs had their digest kept: the attempt keeps it.
    let (s, k) = (store.clone(), key.clone());
    match tasks.spawn_blocking("trajectory-stored", move || s.has_trajectory(&k)).await {
        Ok(Ok(true)) => return Uploaded::Answer(Outbound::TrajectoryAck(key)),
        Ok(Ok(false)) => {}
        Ok(Err(e)) => return refused(key, format!("trajectory not taken: {e}"), false),
        Err(_) => return Uploaded::Stop,
    }
    let Ok(permit) = decodes.clone().acquire_owned().await else { return Uploaded::Stop };
    // Inflating and recompressing is blocking work.
    let decoded = tasks
        .spawn_blocking("trajectory-decode", move || {
            let _permit = permit;
            upload::decode(&bytes, sha256)
        })
        .await;
    match decoded {
        Ok(Ok((named, t))) => Uploaded::Event(WorkerEvent::Trajectory(key, Box::new(named), t)),
        Ok(Err(reason)) => refused(key, format!("trajectory unreadable: {reason}"), false),
        Err(_) => Uploaded::Stop,
    }
}

pub struct ControlService {
    pub handle: Handle,
    pub store: Store,
    /// Owns the status watches and the exports.
    pub tasks: TaskCenter,
    /// One per open status watch or export.
    pub streams: Arc<Semaphore>,
    pub limits: Limits,
}

impl ControlService {
    fn stream_permit(&self) -> Result<OwnedSemaphorePermit, ServiceError> {
        permit(&self.streams, "status watches and exports", self.limits.max_control_streams)
    }
}

fn not_found(id: &SweepId) -> ServiceError {
    ServiceError::NoSweep(id.clone())
}

/// The sweep a control request names: the wire carries its id as a string.
fn sweep_id(req: Request<v1::SweepId>) -> SweepId {
    SweepId::from(req.into_inner().id)
}

#[tonic::async_trait]
impl Control for ControlService {
    async fn submit_sweep(&self, req: Request<v1::SweepSpec>) -> Result<Response<v1::SweepId>, Status> {
        let spec = wire::spec_from_wire(req.into_inner()).map_err(ServiceError::from)?;
        let id = self.handle.ask(|tx| ControlCmd::Submit(Box::new(spec), tx)).await??;
        Ok(Response::new(v1::SweepId { id: id.into_string() }))
    }

    async fn get_sweep(&self, req: Request<v1::SweepId>) -> Result<Response<v1::SweepStatus>, Status> {
        let id = sweep_id(req);
        let st = self.handle.ask(|tx| ControlCmd::Get(id.clone(), tx)).await?.ok_or_else(|| not_found(&id))?;
        Ok(Response::new(wire::status_to_wire(&st)))
    }

    type WatchSweepStream = BoxStream<v1::SweepStatus>;

    async fn watch_sweep(&self, req: Request<v1::SweepId>) -> Result<Response<Self::WatchSweepStream>, Status> {
        let id = sweep_id(req);
        let permit = self.stream_permit()?;
        let first = self.handle.ask(|tx| ControlCmd::Get(id.clone(), tx)).await?.ok_or_else(|| not_found(&id))?;
        let (tx, rx) = mpsc::channel(4);
        let handle = self.handle.clone();
        // Dropped when serving stops; the client sees the stream end and watches again.
        self.tasks.spawn_until_cancelled("watch-sweep", async move {
            let _permit = permit;
            let mut last = first;
            if tx.send(Ok(wire::status_to_wire(&last))).await.is_err() {
                return;
            }
            while !last.state.is_final() {
                tokio::time::sleep(Duration::from_millis(250)).await;
                if tx.is_closed() {
                    // The client went away: give its permit back now, not at the next change.
                    return;
                }
                let Ok(Some(st)) = handle.ask(|t| ControlCmd::Get(id.clone(), t)).await else { break };
                if st != last {
                    if tx.send(Ok(wire::status_to_wire(&st))).await.is_err() {
                        return;
                    }
                    last = st;
                }
            }
        });
        Ok(Response::new(Box::pin(ReceiverStream::new(rx))))
    }

    async fn list_sweeps(&self, _req: Request<v1::ListSweepsRequest>) -> Result<Response<v1::SweepList>, Status> {
        let all = self.handle.ask(ControlCmd::List).await?;
        Ok(Response::new(v1::SweepList { sweeps: all.iter().map(wire::status_to_wire).collect() }))
    }

    async fn cancel_sweep(&self, req: Request<v1::SweepId>) -> Result<Response<v1::SweepStatus>, Status> {
        let id = sweep_id(req);
        let st = self.handle.ask(|tx| ControlCmd::Cancel(id.clone(), tx)).await?.ok_or_else(|| not_found(&id))?;
        Ok(Response::new(wire::status_to_wire(&st)))
    }

    async fn resume_sweep(&self, req: Request<v1::SweepId>) -> Result<Response<v1::SweepStatus>, Status> {
        let id = sweep_id(req);
        let st = self.handle.ask(|tx| ControlCmd::Resume(id.clone(), tx)).await?.ok_or_else(|| not_found(&id))?;
        Ok(Response::new(wire::status_to_wire(&st)))
    }

    type ExportRecordsStream = BoxStream<v1::ExportItem>;

    async fn export_records(&self, req: Request<v1::SweepId>) -> Result<Response<Self::ExportRecordsStream>, Status> {
        let id = sweep_id(req);
        let permit = self.stream_permit()?;
        let meta =
            self.store.sweep(&id).map_err(|e| ServiceError::Internal(e.to_string()))?.ok_or_else(|| not_found(&id))?;
        let (tx, rx) = mpsc::channel(256);
        let store = self.store.clone();
        let token = self.tasks.token();
        self.tasks.spawn_blocking("export-records", move || {
            let _permit = permit;
            use v1::export_item::Item;
            let contract = serde_json::to_string_pretty(&meta.contract).unwrap_or_default();
            if tx.blocking_send(Ok(v1::ExportItem { item: Some(Item::ContractJson(contract)) })).is_err() {
                return;
            }
            let mut sent_screenshots = std::collections::HashSet::new();
            for row in store.records(&id) {
                if token.is_cancelled() {
                    // Never a silently short export: say why it ended.
                    let _ = tx.blocking_send(Err(ServiceError::ExportInterrupted.into()));
                    return;
                }
                let (key, item) = match row {
                    Ok((key, stored)) => {
                        (key, Ok(v1::ExportItem { item: Some(Item::Record((&stored.record).into())) }))
                    }
                    Err(e) => {
                        let _ = tx.blocking_send(Err(ServiceError::DataLoss(e.to_string()).into()));
                        return;
                    }
                };
                if tx.blocking_send(item).is_err() {
                    return;
                }
                // The record's trajectory and the screenshots it names that this export has not sent yet.
                match export_trajectory(&store, &key, &mut sent_screenshots) {
                    Ok(items) => {
                        for item in items {
                            if tx.blocking_send(Ok(item)).is_err() {
                                return;
                            }
                        }
                    }
                    Err(e) => {
                        let _ = tx.blocking_send(Err(ServiceError::DataLoss(e.to_string()).into()));
                        return;
                    }
                }
            }
        });
        Ok(Response::new(Box::pin(ReceiverStream::new(rx))))
    }

    async fn list_workers(&self, _req: Request<v1::ListWorkersRequest>) -> Result<Response<v1::WorkerList>, Status> {
        let all = self.handle.ask(ControlCmd::Workers).await?;
        Ok(Response::new(v1::WorkerList { workers: all.iter().map(wire::worker_to_wire).collect() }))
    }
}

/// The export items of one attempt's trajectory: its compressed JSON in chunks, then each
/// screenshot it names that `sent` does not hold yet, in chunks. Blocking (store reads).
fn export_trajectory(
    store: &Store,
    key: &AttemptKey,
    sent: &mut std::collections::HashSet<String>,
) -> Result<Vec<v1::ExportItem>, crate::store::TrajectoryError> {
    use skillshift_proto::chunks;
    use v1::export_item::Item;
    let Some(compressed) = store.trajectory_compressed(key)? else { return Ok(Vec::new()) };
    let total = compressed.len() as u64;
    let mut items: Vec<v1::ExportItem> = chunks::chunks(&compressed)
        .map(|(offset, data)| v1::ExportItem {
            item: Some(Item::Trajectory(v1::ExportTrajectory { total_bytes: total, offset, data: data.to_vec() })),
        })
        .collect();
    let Some(t) = store.trajectory(key, skillshift_common::blob::MAX_STORED_JSON_BYTES)? else { return Ok(items) };
    for name in t.steps.iter().filter_map(|s| s.screenshot.as_deref()) {
        let digest = name.trim_start_matches("screenshots/").trim_end_matches(".png").to_string();
        if sent.contains(&digest) {
            continue;
        }
        let Some(png) = store.screenshot(&digest)? else { continue };
        let total = png.len() as u64;
        for (offset, data) in chunks::chunks(&png) {
            let part = v1::ExportScreenshot { digest: digest.clone(), total_bytes: total, offset, data: data.to_vec() };
            items.push(v1::ExportItem { item: Some(Item::Screenshot(part)) });
        }
        sent.insert(digest);
    }
    Ok(items)
}

/// Checks `authorization: Bearer <token>` on every call when a token is set.
#[derive(Clone)]
pub struct TokenCheck {
    expected: Option<Arc<[u8]>>,
}

impl TokenCheck {
    pub fn new(token: Option<&str>) -> TokenCheck {
        TokenCheck { expected: token.map(|t| Arc::from(format!("Bearer {t}").into_bytes())) }
    }
}

impl tonic::service::Interceptor for TokenCheck {
    fn call(&mut self, req: Request<()>) -> Result<Request<()>, Status> {
        let Some(expected) = &self.expected else { return Ok(req) };
        match req.metadata().get("authorization") {
            Some(v) if skillshift_http::token::same(v.as_bytes(), expected) => Ok(req),
            Some(_) => Err(ServiceError::Unauthenticated("wrong token").into()),
            None => Err(ServiceError::Unauthenticated("missing token: send `authorization: Bearer <token>`").into()),
        }
    }
}
