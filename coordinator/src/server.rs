//! Runs a coordinator: opens the store, reloads unfinished sweeps, starts the
//! engine's driver loop, the gRPC services and the HTTP page, and shuts them
//! down in order when the root token is cancelled: stop leasing and tell
//! workers to drain, stop serving, then flush the store.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use skillshift_proto::v1::{control_server::ControlServer, worker_server::WorkerServer};
use tokio::net::TcpListener;
use tokio::sync::mpsc;
use tokio::task::JoinHandle;
use tokio_stream::wrappers::TcpListenerStream;
use tokio_util::sync::CancellationToken;
use tonic::transport::{Certificate, Identity, Server, ServerTlsConfig};

use crate::engine::{Effect, Engine, Input, RandomIds, SystemClock};
use crate::service::{ControlService, Handle, TokenCheck, WorkerService};
use crate::store::{Store, StoreError, StoreOp};

/// Inputs waiting for the engine; senders wait when it is full.
const INPUT_CAPACITY: usize = 8192;
/// Inputs handled per group commit at most.
const BATCH: usize = 2048;

#[derive(Debug, Clone)]
pub struct TlsFiles {
    pub cert: PathBuf,
    pub key: PathBuf,
    /// When set, workers and clients must present a certificate it signed.
    pub ca: Option<PathBuf>,
}

#[derive(Debug, Clone)]
pub struct Config {
    pub listen: SocketAddr,
    pub http: Option<SocketAddr>,
    pub data_dir: PathBuf,
    pub token: Option<String>,
    pub tls: Option<TlsFiles>,
    pub lease_ttl: Duration,
}

#[derive(Debug, thiserror::Error)]
pub enum ServerError {
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error("cannot listen on {addr}: {source}")]
    Bind { addr: SocketAddr, source: std::io::Error },
    #[error("tls: reading {path}: {source}")]
    TlsFile { path: PathBuf, source: std::io::Error },
    #[error("tls: {0}")]
    Tls(String),
    #[error("grpc server: {0}")]
    Serve(String),
}

/// A started coordinator.
pub struct Running {
    pub grpc_addr: SocketAddr,
    pub http_addr: Option<SocketAddr>,
    pub handle: Handle,
    pub store: Store,
    join: JoinHandle<Result<(), ServerError>>,
}

impl Running {
    /// Waits until the coordinator has shut down (after the token is cancelled).
    pub async fn wait(self) -> Result<(), ServerError> {
        match self.join.await {
            Ok(r) => r,
            Err(e) => Err(ServerError::Serve(format!("coordinator task failed: {e}"))),
        }
    }
}

fn read(path: &PathBuf) -> Result<Vec<u8>, ServerError> {
    std::fs::read(path).map_err(|source| ServerError::TlsFile { path: path.clone(), source })
}

/// Opens the store, reloads it and starts serving. Returns once listening.
pub async fn start(config: Config, cancel: CancellationToken) -> Result<Running, ServerError> {
    std::fs::create_dir_all(&config.data_dir).map_err(|source| StoreError::Open {
        path: config.data_dir.display().to_string(),
        source: sled::Error::Io(source),
    })?;
    let store = Store::open(&config.data_dir.join("store"))?;
    let mut engine = Engine::new(config.lease_ttl, SystemClock, RandomIds);
    let (metrics, exposition) = skillshift_telemetry::metrics::CoordinatorMetrics::new();
    engine.set_metrics(metrics.clone());
    let rows = store.load_all()?;
    let unfinished = rows.len();
    engine.restore(rows, Instant::now());
    tracing::info!(sweeps = unfinished, "store reloaded");

    let tls = match &config.tls {
        Some(t) => {
            let mut c = ServerTlsConfig::new().identity(Identity::from_pem(read(&t.cert)?, read(&t.key)?));
            if let Some(ca) = &t.ca {
                c = c.client_ca_root(Certificate::from_pem(read(ca)?));
            }
            Some(c)
        }
        None => None,
    };
    let listener =
        TcpListener::bind(config.listen).await.map_err(|source| ServerError::Bind { addr: config.listen, source })?;
    let grpc_addr = listener.local_addr().map_err(|source| ServerError::Bind { addr: config.listen, source })?;
    let http_listener = match config.http {
        Some(addr) => Some(TcpListener::bind(addr).await.map_err(|source| ServerError::Bind { addr, source })?),
        None => None,
    };
    let http_addr = http_listener.as_ref().and_then(|l| l.local_addr().ok());

    let (tx, rx) = mpsc::channel(INPUT_CAPACITY);
    let handle = Handle::new(tx.clone(), engine.ttl(), engine.heartbeat_interval());
    let check = TokenCheck::new(config.token.as_deref());
    let worker_svc = WorkerServer::with_interceptor(WorkerService { handle: handle.clone() }, check.clone());
    let control_svc =
        ControlServer::with_interceptor(ControlService { handle: handle.clone(), store: store.clone() }, check);

    let mut builder = Server::builder().tcp_nodelay(true);
    if let Some(tls) = tls {
        builder = builder.tls_config(tls).map_err(|e| ServerError::Tls(e.to_string()))?;
    }
    let serving = CancellationToken::new();
    let grpc = builder
        .add_service(worker_svc)
        .add_service(control_svc)
        .serve_with_incoming_shutdown(TcpListenerStream::new(listener), serving.clone().cancelled_owned());

    let driver = tokio::spawn(drive(engine, store.clone(), rx));
    let http = http_listener.map(|l| {
        let router =
            crate::http::router(handle.clone()).merge(crate::metrics::router(handle.clone(), metrics, exposition));
        let stop = serving.clone();
        tokio::spawn(async move {
            let _ = axum::serve(l, router).with_graceful_shutdown(stop.cancelled_owned()).await;
        })
    });
    let grpc_task = tokio::spawn(grpc);

    let join = tokio::spawn(async move {
        cancel.cancelled().await;
        // 1. stop leasing and ask workers to drain; 2. close every session.
        let _ = tx.send(Input::Drain).await;
        let _ = tx.send(Input::CloseSessions).await;
        // 3. stop serving (sessions have ended, so this does not hang).
        serving.cancel();
        match tokio::time::timeout(Duration::from_secs(5), grpc_task).await {
            Ok(Ok(Err(e))) => tracing::warn!(error = %e, "grpc server ended with an error"),
            Err(_) => tracing::warn!("grpc server did not stop within 5 s"),
            _ => {}
        }
        if let Some(h) = http {
            let _ = tokio::time::timeout(Duration::from_secs(2), h).await;
        }
        // 4. the driver flushes the store and stops.
        let _ = tx.send(Input::Shutdown).await;
        drop(tx);
        match tokio::time::timeout(Duration::from_secs(10), driver).await {
            Ok(Ok(r)) => r,
            Ok(Err(e)) => Err(ServerError::Serve(format!("engine task failed: {e}"))),
            Err(_) => Err(ServerError::Serve("engine did not stop within 10 s".into())),
        }
    });
    tracing::info!(%grpc_addr, http = ?http_addr, "coordinator listening");
    Ok(Running { grpc_addr, http_addr, handle, store, join })
}

/// The driver: batches inputs, lets the engine handle them, writes and
/// flushes the store once per batch, then performs the effects.
async fn drive(mut engine: Engine, store: Store, mut rx: mpsc::Receiver<Input>) -> Result<(), ServerError> {
    let mut buf: Vec<Input> = Vec::with_capacity(BATCH);
    let period = (engine.ttl() / 20).clamp(Duration::from_millis(20), Duration::from_millis(500));
    let mut tick = tokio::time::interval(period);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
    let mut closing = false;
    let mut stop = false;
    let metrics = engine.metrics().clone();
    while !stop {
        if buf.is_empty() {
            tokio::select! {
                n = rx.recv_many(&mut buf, BATCH) => if n == 0 { break },
                _ = tick.tick() => buf.push(Input::Tick),
            }
        }
        let now = Instant::now();
        for input in buf.drain(..) {
            match input {
                Input::CloseSessions => closing = true,
                Input::Shutdown => {
                    stop = true;
                    continue;
                }
                _ => {}
            }
            engine.handle(input, now);
        }
        engine.schedule(now);
        let (ops, effects) = engine.take_outputs();
        if !ops.is_empty() {
            // Metrics: outcomes of the records this commit makes durable.
            let ingested: Vec<&'static str> = ops
                .iter()
                .filter_map(|op| match op {
                    StoreOp::Record(_, r) if !r.synthetic => Some(r.record.outcome().as_str()),
                    _ => None,
                })
                .collect();
            let s = store.clone();
            let flushed = tokio::task::spawn_blocking(move || {
                s.apply(&ops)?;
                s.flush()
            })
            .await
            .map_err(|e| ServerError::Serve(format!("store task failed: {e}")))?;
            if let Err(e) = flushed {
                tracing::error!(error = %e, "store write failed; stopping before acknowledging anything");
                return Err(e.into());
            }
            for outcome in ingested {
                metrics.record_ingested(outcome, now.elapsed());
            }
        }
        for effect in effects {
            match effect {
                Effect::Reply(f) => f(),
                Effect::Send { worker, conn, msg } => {
                    if conn.tx.try_send(msg).is_err() && !closing {
                        tracing::warn!(worker = %worker, "worker session is not keeping up; cutting it off");
                        buf.push(Input::Disconnect { worker, conn: conn.id });
                    }
                }
            }
        }
    }
    store.flush()?;
    tracing::info!("store flushed; engine stopped");
    Ok(())
}
