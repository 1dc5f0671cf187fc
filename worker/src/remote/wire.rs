//! The worker's wire edge: the one module of the worker that names the
//! generated prost types or tonic.
//!
//! A [`Link`] is one open session with the coordinator: [`Link::open`]
//! connects, registers and sends the `hello`; [`Link::send`] takes an
//! [`Outgoing`] message and [`Link::next`] yields the coordinator's next one as
//! an [`Incoming`], both domain values (shared conversions, such as records and
//! assignments, come from `skillshift_proto::convert`). A failure is a
//! [`LinkError`] whose variant says whether retrying can help; callers decide
//! on the variant, never on a message's text.

use std::time::Duration;

use skillshift_common::ids::AttemptKey;
use skillshift_common::{AttemptSpec, Record, Site, Version};
use skillshift_proto::channel::{self, BearerAuth, ConnectError};
use skillshift_proto::chunks;
use skillshift_proto::convert::{self, WireError};
use skillshift_proto::v1::{self, worker_client::WorkerClient};
use tokio::sync::mpsc;
use tokio_stream::wrappers::ReceiverStream;
use tonic::Streaming;

use super::RemoteConfig;

/// Messages to the coordinator waiting to be written to the stream.
const OUTGOING_CAPACITY: usize = 1024;
/// Trajectory chunks waiting to be written: few, so a large trajectory waits for the network, not memory.
const BULK_CAPACITY: usize = 4;

type Client = WorkerClient<tonic::service::interceptor::InterceptedService<tonic::transport::Channel, BearerAuth>>;

/// Checks the URL, the TLS files and the token once, so that a mistake in them
/// is a clear error up front and not a retry loop.
pub fn check(cfg: &RemoteConfig) -> Result<(), ConnectError> {
    channel::endpoint(&cfg.url, &cfg.tls)?;
    BearerAuth::new(cfg.token.as_deref())?;
    Ok(())
}

/// Why a session could not be opened or went down.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LinkError {
    /// The coordinator refused this worker's credentials; retrying cannot help.
    #[error("{0}")]
    Unauthenticated(String),
    /// The coordinator refused what this worker sent as malformed.
    #[error("{0}")]
    Invalid(String),
    /// Anything else (unreachable, stream broken, queue full): worth retrying.
    #[error("{0}")]
    Unavailable(String),
}

impl From<tonic::Status> for LinkError {
    fn from(s: tonic::Status) -> Self {
        let message = s.message().to_string();
        match s.code() {
            tonic::Code::Unauthenticated => LinkError::Unauthenticated(message),
            tonic::Code::InvalidArgument => LinkError::Invalid(message),
            _ => LinkError::Unavailable(message),
        }
    }
}

impl From<ConnectError> for LinkError {
    fn from(e: ConnectError) -> Self {
        LinkError::Unavailable(e.to_string())
    }
}

/// What the worker tells the coordinator within a session.
#[derive(Debug, Clone, Copy)]
pub enum Outgoing<'a> {
    /// This many more attempts may be assigned.
    Ready { credits: u32 },
    /// An attempt's record (sent again after every reconnection until acknowledged).
    Record { key: &'a AttemptKey, record: &'a Record },
    /// The attempts still running; an attempt the coordinator leased and does not see here is lost.
    /// The attempts it runs, and why it takes no new work, when it does not.
    Heartbeat { running: &'a [AttemptKey], unavailable: Option<&'a str> },
}

impl From<Outgoing<'_>> for v1::WorkerMessage {
    fn from(m: Outgoing<'_>) -> Self {
        use v1::worker_message::Body;
        let body = match m {
            Outgoing::Ready { credits } => Body::Ready(v1::Ready { credits }),
            Outgoing::Record { key, record } => {
                Body::Record(v1::RecordMessage { attempt: Some(key.into()), record: Some(record.into()) })
            }
            Outgoing::Heartbeat { running, unavailable } => Body::Heartbeat(v1::Heartbeat {
                running: running.iter().map(Into::into).collect(),
                unavailable: unavailable.map(str::to_string),
            }),
        };
        v1::WorkerMessage { body: Some(body) }
    }
}

/// What the coordinator tells the worker.
#[derive(Debug, Clone, PartialEq)]
pub enum Incoming {
    /// Run this attempt.
    Assign(AttemptKey, Box<AttemptSpec>),
    /// Stop this attempt.
    Cancel(AttemptKey),
    /// The coordinator asks the worker to drain.
    Drain { reason: String },
    /// The coordinator holds these records durably.
    Ack(Vec<AttemptKey>),
    /// The coordinator refused this record for good.
    Reject { key: AttemptKey, reason: String },
    /// The coordinator holds this attempt's trajectory durably.
    TrajectoryAck(AttemptKey),
    /// The coordinator refused this trajectory for good (`too_large`: past its size limit).
    TrajectoryReject { key: AttemptKey, reason: String, too_large: bool },
}

impl TryFrom<v1::CoordinatorMessage> for Incoming {
    type Error = WireError;
    fn try_from(m: v1::CoordinatorMessage) -> Result<Self, WireError> {
        use v1::coordinator_message::Body;
        match m.body.ok_or(WireError::Missing("body"))? {
            Body::Assign(a) => {
                let (key, spec) = convert::assignment_from_wire(a)?;
                Ok(Incoming::Assign(key, Box::new(spec)))
            }
            Body::Cancel(r) => Ok(Incoming::Cancel(AttemptKey::try_from(r)?)),
            Body::Drain(d) => Ok(Incoming::Drain { reason: d.reason }),
            // A malformed reference in an ack names no attempt; the others still count.
            Body::Ack(a) => {
                Ok(Incoming::Ack(a.attempts.into_iter().filter_map(|r| AttemptKey::try_from(r).ok()).collect()))
            }
            Body::Reject(r) => {
                Ok(Incoming::Reject { key: convert::attempt_key_from_wire(r.attempt)?, reason: r.reason })
            }
            Body::TrajectoryAck(a) => Ok(Incoming::TrajectoryAck(convert::attempt_key_from_wire(a.attempt)?)),
            Body::TrajectoryReject(r) => Ok(Incoming::TrajectoryReject {
                key: convert::attempt_key_from_wire(r.attempt)?,
                reason: r.reason,
                too_large: r.too_large,
            }),
        }
    }
}

/// One turn of [`Link::next`].
#[derive(Debug)]
pub enum Received {
    Message(Incoming),
    /// A message that does not describe a valid domain value; the session goes on.
    Malformed(WireError),
    /// The coordinator closed the session.
    Closed,
}

/// One open session with the coordinator.
pub struct Link {
    /// The id the coordinator gave this worker (the same one again after a reconnection).
    pub worker_id: String,
    /// How often the coordinator wants a heartbeat.
    pub heartbeat: Duration,
    tx: mpsc::Sender<v1::WorkerMessage>,
    bulk: mpsc::Sender<v1::WorkerMessage>,
    inbound: Streaming<v1::CoordinatorMessage>,
}

/// Sends trajectory chunks on a link's own small queue, waiting for room, so
/// a large trajectory never crowds out records and heartbeats.
#[derive(Clone)]
pub struct Uploader {
    bulk: mpsc::Sender<v1::WorkerMessage>,
}

impl Uploader {
    /// Sends `blob` in chunks of at most [`chunks::CHUNK_BYTES`]; `false` once the link is gone.
    pub async fn send(&self, key: &AttemptKey, blob: &[u8]) -> bool {
        let total = blob.len() as u64;
        for (offset, data) in chunks::chunks(blob) {
            let chunk =
                v1::TrajectoryChunk { attempt: Some(key.into()), total_bytes: total, offset, data: data.to_vec() };
            let m = v1::WorkerMessage { body: Some(v1::worker_message::Body::TrajectoryChunk(chunk)) };
            if self.bulk.send(m).await.is_err() {
                return false;
            }
        }
        true
    }
}

impl Link {
    /// Connects, registers (as `previous_id` again, when it is not empty) and
    /// opens the session stream, naming the attempts still `running` so that a
    /// restarted coordinator re-attaches them.
    pub async fn open(
        cfg: &RemoteConfig,
        hosts: &[(Site, Version)],
        simulated: bool,
        slots: u32,
        previous_id: &str,
        running: &[AttemptKey],
    ) -> Result<Link, LinkError> {
        let ep = channel::endpoint(&cfg.url, &cfg.tls)?;
        let ch = ep.connect().await.map_err(|e| LinkError::Unavailable(e.to_string()))?;
        let auth = BearerAuth::new(cfg.token.as_deref())?;
        let mut client: Client = WorkerClient::with_interceptor(ch, auth);
        let reply = client
            .register(v1::RegisterRequest {
                name: cfg.name.clone(),
                hosts: hosts.iter().map(|(s, v)| convert::site_version_to_wire(*s, *v)).collect(),
                slots,
                previous_id: previous_id.to_string(),
                simulated,
            })
            .await?
            .into_inner();
        let (tx, rx) = mpsc::channel(OUTGOING_CAPACITY);
        let (bulk, bulk_rx) = mpsc::channel(BULK_CAPACITY);
        let hello = v1::Hello {
            worker_id: reply.worker_id.clone(),
            running: running.iter().map(Into::into).collect(),
            // Credits follow in a `ready` once the session is up.
            free_slots: 0,
        };
        let first = v1::WorkerMessage { body: Some(v1::worker_message::Body::Hello(hello)) };
        tx.try_send(first).map_err(|_| LinkError::Unavailable("outgoing queue full at hello".into()))?;
        // Control messages and trajectory chunks share the stream; the hello goes first.
        let outgoing = tokio_stream::StreamExt::merge(ReceiverStream::new(rx), ReceiverStream::new(bulk_rx));
        let inbound = client.session(outgoing).await?.into_inner();
        let heartbeat = Duration::from_millis(reply.heartbeat_ms.clamp(50, 60_000));
        Ok(Link { worker_id: reply.worker_id, heartbeat, tx, bulk, inbound })
    }

    /// The trajectory sender of this link.
    pub fn uploader(&self) -> Uploader {
        Uploader { bulk: self.bulk.clone() }
    }

    /// Queues a message for the stream; `false` when the queue is full (the
    /// coordinator stopped reading, so the session should be dropped).
    pub fn send(&self, m: Outgoing<'_>) -> bool {
        self.tx.try_send(m.into()).is_ok()
    }

    /// The coordinator's next message.
    pub async fn next(&mut self) -> Result<Received, LinkError> {
        Ok(match self.inbound.message().await? {
            None => Received::Closed,
            Some(m) => match Incoming::try_from(m) {
                Ok(i) => Received::Message(i),
                Err(e) => Received::Malformed(e),
            },
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use skillshift_common::{Condition, Uid};

    fn key(unit: u32) -> AttemptKey {
        AttemptKey { sweep: "sw".into(), unit, attempt: 0 }
    }

    fn coordinator(body: v1::coordinator_message::Body) -> v1::CoordinatorMessage {
        v1::CoordinatorMessage { body: Some(body) }
    }

    #[test]
    fn outgoing_messages_carry_their_keys_and_record() {
        use v1::worker_message::Body;
        let uid: Uid = "skillshift.magento.v1.3".parse().expect("uid");
        let rec = Record::new(uid, Condition::Src);
        let (k0, k1) = (key(0), key(1));
        let m = v1::WorkerMessage::from(Outgoing::Record { key: &k0, record: &rec });
        let Some(Body::Record(r)) = m.body else { panic!("a record message") };
        assert_eq!(convert::attempt_key_from_wire(r.attempt), Ok(k0.clone()));
        assert_eq!(r.record.map(Record::try_from), Some(Ok(rec)));

        let m = v1::WorkerMessage::from(Outgoing::Heartbeat { running: &[k0.clone(), k1.clone()], unavailable: None });
        let Some(Body::Heartbeat(h)) = m.body else { panic!("a heartbeat") };
        let keys: Vec<AttemptKey> = h.running.into_iter().filter_map(|r| AttemptKey::try_from(r).ok()).collect();
        assert_eq!(keys, vec![k0, k1]);

        let m = v1::WorkerMessage::from(Outgoing::Ready { credits: 3 });
        assert_eq!(m.body, Some(Body::Ready(v1::Ready { credits: 3 })));
    }

    #[test]
    fn incoming_messages_become_domain_values_and_malformed_ones_name_the_field() {
        use v1::coordinator_message::Body;
        let spec = AttemptSpec {
            sweep: "sw".into(),
            uid: Uid::new(Site::Gitlab, Version::V2, 4),
            condition: Condition::TgtExec,
            rep: 1,
            seed: 9,
            task_timeout_ms: 1000,
            config_digest: Some("sha256:x".into()),
            ..AttemptSpec::example()
        };
        let assign = coordinator(Body::Assign(convert::assignment_to_wire(&key(2), &spec)));
        assert_eq!(Incoming::try_from(assign), Ok(Incoming::Assign(key(2), Box::new(spec))));

        let ack = coordinator(Body::Ack(v1::Ack {
            attempts: vec![(&key(1)).into(), v1::AttemptRef { sweep: String::new(), unit: 9, attempt: 0 }],
        }));
        assert_eq!(Incoming::try_from(ack), Ok(Incoming::Ack(vec![key(1)])), "the malformed reference is skipped");

        let reject = coordinator(Body::Reject(v1::Reject { attempt: Some((&key(5)).into()), reason: "no".into() }));
        assert_eq!(Incoming::try_from(reject), Ok(Incoming::Reject { key: key(5), reason: "no".into() }));

        let cancel = coordinator(Body::Cancel(v1::AttemptRef { sweep: String::new(), unit: 1, attempt: 0 }));
        assert_eq!(Incoming::try_from(cancel), Err(WireError::Missing("attempt.sweep")));
        assert_eq!(Incoming::try_from(v1::CoordinatorMessage { body: None }), Err(WireError::Missing("body")));
    }

    #[test]
    fn status_codes_decide_the_link_error() {
        assert_eq!(
            LinkError::from(tonic::Status::unauthenticated("bad token")),
            LinkError::Unauthenticated("bad token".into())
        );
        assert_eq!(LinkError::from(tonic::Status::invalid_argument("x")), LinkError::Invalid("x".into()));
        assert_eq!(
            LinkError::from(tonic::Status::unavailable("Connection refused")),
            LinkError::Unavailable("Connection refused".into())
        );
    }
}
