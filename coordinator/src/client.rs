//! The control client behind `skillshift sweep`: connects (token, optional
//! TLS), speaks the Control service and returns domain types.

use futures::Stream;
use skillshift_common::ids::SweepId;
use skillshift_common::Record;
use skillshift_proto::channel::{self, BearerAuth, ClientTls, ConnectError};
use skillshift_proto::v1::{self, control_client::ControlClient};
use tokio_stream::StreamExt;
use tonic::service::interceptor::InterceptedService;
use tonic::transport::Channel;

use crate::planner::SweepSpec;
use crate::status::{SweepStatus, WorkerInfo};
use crate::wire;

#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    #[error(transparent)]
    Connect(#[from] ConnectError),
    #[error("coordinator: {}", status_line(.0))]
    Status(#[from] tonic::Status),
    #[error("coordinator sent a malformed {what}: {message}")]
    Malformed { what: &'static str, message: String },
}

fn status_line(s: &tonic::Status) -> String {
    match s.code() {
        tonic::Code::Unauthenticated => format!("refused: {} (check --token / SKILLSHIFT_TOKEN)", s.message()),
        tonic::Code::Unavailable => format!("unreachable: {}", s.message()),
        _ => s.message().to_string(),
    }
}

/// One item of an export: the contract first, then records, each followed by
/// its trajectory's chunks and the chunks of screenshots not sent before.
#[derive(Debug, Clone)]
pub enum ExportItem {
    Contract(serde_json::Value),
    Record(Box<Record>),
    /// A piece of the preceding record's trajectory (zstd JSON; `skillshift_common::blob::decompress`).
    Trajectory {
        total: u64,
        offset: u64,
        data: Vec<u8>,
    },
    /// A piece of a screenshot (PNG) by its SHA-256.
    Screenshot {
        digest: String,
        total: u64,
        offset: u64,
        data: Vec<u8>,
    },
}

pub struct Client {
    inner: ControlClient<InterceptedService<Channel, BearerAuth>>,
}

impl Client {
    pub async fn connect(url: &str, token: Option<&str>, tls: &ClientTls) -> Result<Client, ClientError> {
        let ch = channel::connect(url, tls).await?;
        let auth = BearerAuth::new(token)?;
        Ok(Client { inner: ControlClient::with_interceptor(ch, auth).max_decoding_message_size(64 << 20) })
    }

    pub async fn submit(&mut self, spec: &SweepSpec) -> Result<SweepId, ClientError> {
        Ok(self.inner.submit_sweep(wire::spec_to_wire(spec)).await?.into_inner().id.into())
    }

    /// A sweep's id as the wire carries it.
    fn wire_id(id: &SweepId) -> v1::SweepId {
        v1::SweepId { id: id.to_string() }
    }

    fn status(w: v1::SweepStatus) -> Result<SweepStatus, ClientError> {
        wire::status_from_wire(w).map_err(|e| ClientError::Malformed { what: "status", message: e.to_string() })
    }

    pub async fn get(&mut self, id: &SweepId) -> Result<SweepStatus, ClientError> {
        Self::status(self.inner.get_sweep(Self::wire_id(id)).await?.into_inner())
    }

    pub async fn list(&mut self) -> Result<Vec<SweepStatus>, ClientError> {
        let l = self.inner.list_sweeps(v1::ListSweepsRequest {}).await?.into_inner();
        l.sweeps.into_iter().map(Self::status).collect()
    }

    pub async fn cancel(&mut self, id: &SweepId) -> Result<SweepStatus, ClientError> {
        Self::status(self.inner.cancel_sweep(Self::wire_id(id)).await?.into_inner())
    }

    pub async fn resume(&mut self, id: &SweepId) -> Result<SweepStatus, ClientError> {
        Self::status(self.inner.resume_sweep(Self::wire_id(id)).await?.into_inner())
    }

    pub async fn workers(&mut self) -> Result<Vec<WorkerInfo>, ClientError> {
        let l = self.inner.list_workers(v1::ListWorkersRequest {}).await?.into_inner();
        l.workers
            .into_iter()
            .map(|w| {
                wire::worker_from_wire(w).map_err(|e| ClientError::Malformed { what: "worker", message: e.to_string() })
            })
            .collect()
    }

    /// Status snapshots until the sweep is done or cancelled.
    pub async fn watch(
        &mut self,
        id: &SweepId,
    ) -> Result<impl Stream<Item = Result<SweepStatus, ClientError>>, ClientError> {
        let s = self.inner.watch_sweep(Self::wire_id(id)).await?.into_inner();
        Ok(s.map(|item| Self::status(item?)))
    }

    /// The contract, then every stored record in (unit, attempt) order.
    pub async fn export(
        &mut self,
        id: &SweepId,
    ) -> Result<impl Stream<Item = Result<ExportItem, ClientError>>, ClientError> {
        let s = self.inner.export_records(Self::wire_id(id)).await?.into_inner();
        Ok(s.map(|item| {
            use v1::export_item::Item;
            match item?.item {
                Some(Item::ContractJson(text)) => serde_json::from_str(&text)
                    .map(ExportItem::Contract)
                    .map_err(|e| ClientError::Malformed { what: "contract", message: e.to_string() }),
                Some(Item::Record(r)) => Record::try_from(r)
                    .map(|r| ExportItem::Record(Box::new(r)))
                    .map_err(|e| ClientError::Malformed { what: "record", message: e.to_string() }),
                Some(Item::Trajectory(t)) => {
                    Ok(ExportItem::Trajectory { total: t.total_bytes, offset: t.offset, data: t.data })
                }
                Some(Item::Screenshot(p)) => Ok(ExportItem::Screenshot {
                    digest: p.digest,
                    total: p.total_bytes,
                    offset: p.offset,
                    data: p.data,
                }),
                None => Err(ClientError::Malformed { what: "export item", message: "empty".into() }),
            }
        }))
    }
}
