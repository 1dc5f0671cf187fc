//! Runs a coordinator: opens the store, reloads unfinished sweeps, starts the
//! engine's driver loop, the gRPC services and the HTTP page, and shuts them
//! down in order when the root token is cancelled: stop leasing and tell
//! workers to drain, close the sessions, stop serving, then flush the store.
//!
//! Every task belongs to a [`TaskCenter`]. The root centre is made from the
//! shutdown token and owns the shutdown task. Because the stages must stop one
//! after the other, not all at once, each has a centre of its own that the
//! shutdown task cancels in turn: `serving` (the gRPC and HTTP servers, and
//! per worker session a child centre for the session's reader, the status
//! watches and the exports) and `engine` (the driver and its store commits).
//!
//! A store that cannot write (a full disk) stops the coordinator: the driver
//! acknowledges nothing more, cancels the root, and [`Running::wait`] returns
//! the store's error once everything has stopped, so the process exits
//! non-zero with that one line and a supervisor can restart it.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use skillshift_proto::v1::{control_server::ControlServer, worker_server::WorkerServer};
use skillshift_taskcenter::TaskCenter;
use tokio::net::TcpListener;
use tokio::sync::{mpsc, Semaphore};
use tokio::task::JoinHandle;
use tokio_stream::wrappers::TcpListenerStream;
use tokio_util::sync::CancellationToken;
use tonic::service::interceptor::InterceptedService;
use tonic::transport::{Certificate, Identity, Server, ServerTlsConfig};

use crate::engine::{Effect, Engine, Input, RandomIds, SystemClock};
use crate::limits::Limits;
use crate::live::Live;
use crate::llm_budget::{Budget, BudgetConfig};
use crate::llm_service::BudgetService;
use crate::service::{ControlService, Handle, TokenCheck, WorkerService};
use crate::store::{Store, StoreError, StoreOp};
use skillshift_live::{LiveCoordinator, PagesHook};
use skillshift_proto::v1::llm_budget_server::LlmBudgetServer;

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
    pub limits: Limits,
    /// The cluster's LLM budget (`--llm-concurrency`, `--llm-rpm`, `--llm-tpm`); the default meters nothing.
    pub llm_budget: BudgetConfig,
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
    #[error("{0}")]
    Config(String),
}

/// A token every header can carry: not empty, printable ASCII without spaces.
fn check_token(token: &str) -> Result<(), ServerError> {
    if token.is_empty() {
        return Err(ServerError::Config(
            "the token is empty: give a non-empty token, or no token to run without authentication".into(),
        ));
    }
    if !token.bytes().all(|b| b.is_ascii_graphic()) {
        return Err(ServerError::Config("the token must be printable ASCII without spaces".into()));
    }
    Ok(())
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
    start_with_pages(config, cancel, None).await
}

/// As [`start`], with `pages` (when given) served on the `--http` port: the
/// hook gets the running coordinator as [`crate::live::Live`] (the trajectory
/// viewer, which lives in another crate: the coordinator does not depend on it).
pub async fn start_with_pages(
    config: Config,
    cancel: CancellationToken,
    pages: Option<PagesHook>,
) -> Result<Running, ServerError> {
    if let Some(t) = &config.token {
        check_token(t)?;
    }
    std::fs::create_dir_all(&config.data_dir).map_err(|source| StoreError::Open {
        path: config.data_dir.display().to_string(),
        source: sled::Error::Io(source),
    })?;
    let store = Store::open(&config.data_dir.join("store"))?;
    let limits = config.limits.clone();
    let mut engine = Engine::with_limits(config.lease_ttl, limits.clone(), SystemClock, RandomIds);
    let (metrics, exposition) = skillshift_telemetry::metrics::CoordinatorMetrics::new();
    engine.set_metrics(metrics.clone());
    let rows = store.load_all()?;
    let unfinished = rows.len();
    let now = Instant::now();
    engine.restore(rows, now);
    let workers = store.load_workers()?;
    let registered = workers.len();
    engine.restore_workers(workers, now);
    tracing::info!(sweeps = unfinished, workers = registered, "store reloaded");

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

    let root = TaskCenter::with_token("coordinator", cancel);
    let serving = TaskCenter::new("coordinator/serving");
    let engine_tasks = TaskCenter::new("coordinator/engine");

    let (tx, rx) = mpsc::channel(INPUT_CAPACITY);
    let handle = Handle::new(tx.clone(), engine.ttl(), engine.heartbeat_interval());
    let check = TokenCheck::new(config.token.as_deref());
    let worker_svc = WorkerServer::new(WorkerService {
        handle: handle.clone(),
        tasks: serving.clone(),
        limits: limits.clone(),
        sessions: Arc::new(Semaphore::new(limits.max_sessions)),
        decodes: Arc::new(Semaphore::new(limits.max_concurrent_decodes)),
        store: store.clone(),
    })
    .max_decoding_message_size(limits.max_message_bytes)
    .max_encoding_message_size(limits.max_message_bytes);
    let worker_svc = InterceptedService::new(worker_svc, check.clone());
    let control_svc = ControlServer::new(ControlService {
        handle: handle.clone(),
        store: store.clone(),
        tasks: serving.clone(),
        streams: Arc::new(Semaphore::new(limits.max_control_streams)),
        limits: limits.clone(),
    })
    .max_decoding_message_size(limits.max_message_bytes)
    .max_encoding_message_size(limits.max_message_bytes);
    let control_svc = InterceptedService::new(control_svc, check.clone());
    // Permit ids are tagged with the store's key, so a restart can check the ones workers renew.
    let budget = match store.llm_permit_key() {
        Ok(key) => Budget::keyed(config.llm_budget, config.lease_ttl, key),
        Err(e) => {
            tracing::warn!(error = %e, "cannot keep the llm permit key; permits granted before a restart will not be adopted");
            Budget::new(config.llm_budget, config.lease_ttl)
        }
    };
    // A store with sweeps or workers in it: a restart, and workers may hold permits this process must learn first.
    let budget = if unfinished > 0 || registered > 0 { budget.restarted() } else { budget };
    let budget_svc = InterceptedService::new(LlmBudgetServer::new(BudgetService { budget: budget.clone() }), check);

    // Keepalive pings find a half-open connection (a worker's host gone) within a minute.
    let mut builder = Server::builder()
        .tcp_nodelay(true)
        .http2_keepalive_interval(Some(Duration::from_secs(30)))
        .http2_keepalive_timeout(Some(Duration::from_secs(20)))
        .max_concurrent_streams(Some(crate::limits::MAX_STREAMS_PER_CONNECTION));
    if let Some(tls) = tls {
        builder = builder.tls_config(tls).map_err(|e| ServerError::Tls(e.to_string()))?;
    }
    let router = builder.add_service(worker_svc).add_service(control_svc).add_service(budget_svc);
    if config.llm_budget.is_metered() {
        // Permits not renewed within the lease TTL come back (a lost worker's), checked a few times per TTL.
        let (budget, period) = (budget.clone(), (config.lease_ttl / 4).max(Duration::from_millis(50)));
        serving.spawn("llm-budget-expiry", move |token| async move {
            let mut tick = tokio::time::interval(period);
            loop {
                tokio::select! {
                    _ = tick.tick() => budget.sweep_expired(),
                    _ = token.cancelled() => break,
                }
            }
        });
        tracing::info!(budget = ?config.llm_budget, "metering llm calls across the cluster");
    }

    let driver = {
        let (store, tasks, root_token) = (store.clone(), engine_tasks.clone(), root.token());
        let deadline = limits.store_commit_deadline;
        engine_tasks.spawn("driver", move |token| async move {
            let result = drive(engine, store, rx, tasks, token, deadline).await;
            if result.is_err() {
                // The store cannot write: nothing may be acknowledged any more, so stop everything.
                root_token.cancel();
            }
            result
        })
    };
    let http = http_listener.map(|l| {
        let extra = pages.map(|build| {
            let live: Arc<dyn LiveCoordinator> = Arc::new(Live { store: store.clone(), handle: handle.clone() });
            build(live, serving.clone())
        });
        let router = crate::http::router_with(handle.clone(), config.token.as_deref(), extra)
            .merge(crate::metrics::router(handle.clone(), metrics, exposition, budget));
        let bounds = limits.http;
        serving.spawn("http", move |token| async move {
            let _ = skillshift_http::serve(l, router, bounds, token.cancelled_owned()).await;
        })
    });
    let grpc_task = serving.spawn("grpc", move |token| {
        router.serve_with_incoming_shutdown(TcpListenerStream::new(listener), token.cancelled_owned())
    });

    let join = root.spawn("shutdown", move |token| async move {
        token.cancelled().await;
        // 1. stop leasing and ask workers to drain; 2. close every session.
        let _ = tx.send(Input::Drain).await;
        let _ = tx.send(Input::CloseSessions).await;
        // 3. stop serving (sessions have ended, so this does not hang); the
        // sessions' readers stop without losing their workers' leases.
        serving.cancel();
        match tokio::time::timeout(Duration::from_secs(5), grpc_task).await {
            Ok(Ok(Err(e))) => tracing::warn!(error = %e, "grpc server ended with an error"),
            Err(_) => tracing::warn!("grpc server did not stop within 5 s"),
            _ => {}
        }
        if let Some(h) = http {
            let _ = tokio::time::timeout(Duration::from_secs(2), h).await;
        }
        serving.shutdown(Duration::from_secs(1)).await;
        // 4. the driver flushes the store and stops.
        let _ = tx.send(Input::Shutdown).await;
        drop(tx);
        let result = match tokio::time::timeout(Duration::from_secs(10), driver).await {
            Ok(Ok(r)) => r,
            Ok(Err(e)) => Err(ServerError::Serve(format!("engine task failed: {e}"))),
            Err(_) => Err(ServerError::Serve("engine did not stop within 10 s".into())),
        };
        engine_tasks.shutdown(Duration::from_secs(1)).await;
        result
    });
    tracing::info!(%grpc_addr, http = ?http_addr, "coordinator listening");
    Ok(Running { grpc_addr, http_addr, handle, store, join })
}

/// The driver: batches inputs, lets the engine handle them, writes and
/// flushes the store once per batch, then performs the effects.
///
/// It stops on [`Input::Shutdown`] (sent by the shutdown task once serving has
/// stopped) or when every sender is gone. Its token is a backstop, cancelled
/// only if the driver did not stop in time: it then stops the next time it
/// waits for input, after flushing the store.
async fn drive(
    mut engine: Engine,
    store: Store,
    mut rx: mpsc::Receiver<Input>,
    tasks: TaskCenter,
    token: CancellationToken,
    deadline: Duration,
) -> Result<(), ServerError> {
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
                _ = token.cancelled() => break,
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
            // On an error nothing of this batch is acknowledged; the error is the coordinator's last line.
            store_write(&tasks, &store, deadline, "store-commit", move || {
                s.apply(&ops)?;
                s.flush()
            })
            .await?;
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
    let s = store.clone();
    store_write(&tasks, &store, deadline, "store-flush", move || s.flush()).await?;
    tracing::info!("store flushed; engine stopped");
    Ok(())
}

/// Runs a store write on the blocking pool, bounded by `deadline`: a disk that stops answering (full,
/// failing) can block a write forever instead of failing it, and one still blocked then marks the store
/// stalled.
async fn store_write<T: Send + 'static>(
    tasks: &TaskCenter,
    store: &Store,
    deadline: Duration,
    name: &'static str,
    write: impl FnOnce() -> Result<T, StoreError> + Send + 'static,
) -> Result<T, ServerError> {
    match tokio::time::timeout(deadline, tasks.spawn_blocking(name, write)).await {
        Ok(joined) => Ok(joined.map_err(|e| ServerError::Serve(format!("store task failed: {e}")))??),
        Err(_) => Err(store.stalled(deadline).into()),
    }
}
