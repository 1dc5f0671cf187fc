//! The HTTP server of the coordinator's `--http` port and of `skillshift view`,
//! with the bounds `axum::serve` lacks ([`HttpLimits`]):
//!
//! * at most `max_connections` open at once: one past it is accepted and
//!   closed at once, so the process never holds more sockets than that for
//!   HTTP, whatever the clients do (file descriptors stay for gRPC and the
//!   store);
//! * a request's header must arrive within `header_timeout` (hyper's own
//!   timer), so a client that trickles a header is cut off;
//! * a connection with no byte read or written for `idle_timeout` is closed,
//!   silent or kept alive; an event stream writes a keep-alive comment every
//!   15 s, well within it;
//! * an accept that fails (no file descriptor left) waits before the next, so
//!   the loop never spins.
//!
//! Each request carries its peer's address as axum's `ConnectInfo`, for caps
//! per client (the viewer's event streams). HTTP/1.1 only: browsers, scrapers
//! and the CLI speak it.

use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use axum::extract::ConnectInfo;
use axum::Router;
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::Semaphore;
use tower::ServiceExt;

/// HTTP connections open at once, by default. The kernel's backlog holds the rest until one closes.
pub const MAX_HTTP_CONNECTIONS: usize = 256;
/// How long a request's header may take to arrive, by default.
pub const HEADER_TIMEOUT: Duration = Duration::from_secs(10);
/// How long a connection may pass without a byte either way, by default.
pub const IDLE_TIMEOUT: Duration = Duration::from_secs(60);
/// How long a failed accept waits before the next.
const ACCEPT_BACKOFF: Duration = Duration::from_millis(100);
/// How long open connections get to finish at shutdown.
const DRAIN: Duration = Duration::from_secs(5);

/// The bounds one HTTP server enforces.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HttpLimits {
    pub max_connections: usize,
    pub header_timeout: Duration,
    pub idle_timeout: Duration,
}

impl Default for HttpLimits {
    fn default() -> HttpLimits {
        HttpLimits { max_connections: MAX_HTTP_CONNECTIONS, header_timeout: HEADER_TIMEOUT, idle_timeout: IDLE_TIMEOUT }
    }
}

/// A socket that notes when it last moved a byte, in milliseconds since `epoch`.
struct Watched {
    inner: TcpStream,
    epoch: Instant,
    last: Arc<AtomicU64>,
}

impl Watched {
    fn touch(&self) {
        self.last.store(self.epoch.elapsed().as_millis() as u64, Ordering::Relaxed);
    }
}

impl AsyncRead for Watched {
    fn poll_read(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<std::io::Result<()>> {
        let before = buf.filled().len();
        let r = Pin::new(&mut self.inner).poll_read(cx, buf);
        if buf.filled().len() > before {
            self.touch();
        }
        r
    }
}

impl AsyncWrite for Watched {
    fn poll_write(mut self: Pin<&mut Self>, cx: &mut Context<'_>, data: &[u8]) -> Poll<std::io::Result<usize>> {
        let r = Pin::new(&mut self.inner).poll_write(cx, data);
        if matches!(r, Poll::Ready(Ok(n)) if n > 0) {
            self.touch();
        }
        r
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

/// Resolves once the connection has moved no byte for `idle`.
async fn idle_for(epoch: Instant, last: &AtomicU64, idle: Duration) {
    loop {
        let quiet = epoch.elapsed().saturating_sub(Duration::from_millis(last.load(Ordering::Relaxed)));
        if quiet >= idle {
            return;
        }
        tokio::time::sleep(idle - quiet).await;
    }
}

/// Serves `router` on `listener` within `limits` until `shutdown` resolves;
/// then open connections get a few seconds to finish.
pub async fn serve(
    listener: TcpListener,
    router: Router,
    limits: HttpLimits,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    let permits = Arc::new(Semaphore::new(limits.max_connections));
    let stop = tokio_util::sync::CancellationToken::new();
    let mut connections = tokio::task::JoinSet::new();
    let mut refused: u64 = 0;
    tokio::pin!(shutdown);
    loop {
        let (stream, peer) = tokio::select! {
            _ = &mut shutdown => break,
            accepted = listener.accept() => match accepted {
                Ok(pair) => pair,
                Err(e) => {
                    tracing::warn!(error = %e, "http accept failed; waiting before the next");
                    tokio::time::sleep(ACCEPT_BACKOFF).await;
                    continue;
                }
            },
        };
        // Finished connections leave the set as they go, so it holds only open ones.
        while connections.try_join_next().is_some() {}
        let Ok(permit) = permits.clone().try_acquire_owned() else {
            refused += 1;
            if refused.is_power_of_two() {
                tracing::warn!(%peer, refused, limit = limits.max_connections, "http connection refused: at the limit");
            }
            drop(stream);
            continue;
        };
        let router = router.clone();
        let stop = stop.clone();
        connections.spawn(async move {
            let _permit = permit;
            let epoch = Instant::now();
            let last = Arc::new(AtomicU64::new(0));
            let io = TokioIo::new(Watched { inner: stream, epoch, last: last.clone() });
            let service = hyper::service::service_fn(move |mut req: hyper::Request<hyper::body::Incoming>| {
                req.extensions_mut().insert(ConnectInfo(peer));
                router.clone().oneshot(req.map(axum::body::Body::new))
            });
            let mut builder = hyper::server::conn::http1::Builder::new();
            builder.timer(TokioTimer::new()).header_read_timeout(limits.header_timeout);
            let conn = builder.serve_connection(io, service);
            tokio::pin!(conn);
            tokio::select! {
                _ = conn.as_mut() => return,
                _ = idle_for(epoch, &last, limits.idle_timeout) => return,
                _ = stop.cancelled() => conn.as_mut().graceful_shutdown(),
            }
            let _ = tokio::time::timeout(DRAIN, conn).await;
        });
    }
    stop.cancel();
    let drained = tokio::time::timeout(DRAIN + Duration::from_secs(1), async {
        while connections.join_next().await.is_some() {}
    })
    .await;
    if drained.is_err() {
        connections.abort_all();
    }
    Ok(())
}

/// The address a request came from, when the server ([`serve`]) said.
pub fn peer(req: &axum::extract::Request) -> Option<SocketAddr> {
    req.extensions().get::<ConnectInfo<SocketAddr>>().map(|c| c.0)
}
