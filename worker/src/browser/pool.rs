//! The pool: [`Driver`], one supervised chromedriver per slot, hands each attempt a [`Session`]
//! ([`Driver::checkout`]) and takes it back ([`Driver::checkin`]), keeping the browser for the
//! next attempt, made clean in a browser context of its own (or a fresh tab), until it has served
//! [`BrowserConfig::reuse`] attempts.

use std::collections::BTreeSet;
use std::process::Stdio;
use std::sync::Arc;
use std::time::Duration;

use fantoccini::Client;
use tokio::sync::Mutex;

use super::context::Spare;
use super::process::{free_port, BrowserProc, DriverProc};
use super::{BrowserConfig, BrowserError, Session};
use crate::cdp::Connection;

/// A browser kept between attempts.
struct Idle {
    client: Client,
    browser: BrowserProc,
    devtools: Option<Arc<Connection>>,
    profile: tempfile::TempDir,
    uses: u32,
    /// Origins the last attempt touched: their storage is cleared before the next one.
    touched: BTreeSet<String>,
    /// The browser serves each attempt in a browser context of its own (the last one is disposed).
    contexts: bool,
    /// The next attempt's context, made at checkin so its tab is ready by the next checkout.
    spare: Option<Spare>,
}

/// One supervised chromedriver. Cheap to share behind an `Arc`.
pub struct Driver {
    cfg: BrowserConfig,
    // A tokio mutex: (re)starting holds it across awaits, and only one attempt
    // per slot uses the driver, so there is no contention to speak of.
    proc: Mutex<Option<DriverProc>>,
    // A std mutex: it guards a take or a replace, never an await.
    idle: std::sync::Mutex<Option<Idle>>,
}

impl Driver {
    pub fn new(cfg: BrowserConfig) -> Self {
        Driver { cfg, proc: Mutex::new(None), idle: std::sync::Mutex::new(None) }
    }

    /// A session for one attempt: the kept browser in a fresh browser context
    /// of its own (cookies, storage, cache, service workers and history
    /// unseen by any other attempt), or, when the browser's DevTools socket
    /// is not open or without [`BrowserConfig::contexts`], in a fresh tab with cookies,
    /// cache and the storage of the origins the last attempt touched cleared;
    /// a new browser when none is kept or the kept one cannot be made clean.
    pub async fn checkout(&self) -> Result<Session, BrowserError> {
        // An attempt's tabs need no chromedriver, but a kept browser is only handed out with a live
        // one (which ends its session): when it died, the browser goes and both start again.
        self.ensure().await?;
        let idle = self.idle.lock().ok().and_then(|mut i| i.take());
        if let Some(idle) = idle {
            let mut session =
                Session::assemble(idle.client, idle.browser, idle.devtools, self.cfg.clone(), idle.profile, idle.uses);
            let cleaned = if idle.contexts {
                let span = tracing::info_span!("new_context", spare = idle.spare.is_some());
                let entered = async {
                    match idle.spare {
                        Some(spare) => {
                            session.context = Some(spare.context);
                            session.switch_to(&spare.target).await
                        }
                        None => session.enter_context().await,
                    }
                };
                tracing::Instrument::instrument(entered, span).await
            } else {
                let origins: Vec<String> = idle.touched.into_iter().collect();
                let span = tracing::info_span!("recycle", origins = origins.len());
                tracing::Instrument::instrument(session.recycle(&origins), span).await
            };
            match cleaned {
                Ok(()) => return Ok(session),
                Err(e) => {
                    tracing::warn!(error = %e, "could not clean the kept browser; starting a new one");
                    session.close().await;
                }
            }
        }
        let span = tracing::info_span!("new_browser");
        tracing::Instrument::instrument(Session::open(self), span).await
    }

    /// Takes a session back after an attempt whose browser is healthy: its
    /// browser context is disposed (with every tab, cookie and storage of
    /// the attempt) and the browser kept for the next attempt, or closed once
    /// it has served [`BrowserConfig::reuse`] attempts or when the context
    /// cannot be disposed.
    pub async fn checkin(&self, session: Session) {
        if let Some(conn) = &session.devtools {
            conn.end_tabs();
        }
        let uses = session.uses + 1;
        if uses >= self.cfg.reuse.max(1) {
            session.close().await;
            return;
        }
        let contexts = session.context.is_some();
        let mut spare = None;
        if contexts {
            let span = tracing::info_span!("dispose_context");
            if let Err(e) = tracing::Instrument::instrument(session.leave_context(), span).await {
                tracing::warn!(error = %e, "could not dispose the attempt's browser context; closing the browser");
                session.close().await;
                return;
            }
            // Made now, the next attempt's context and tab are ready by its checkout, where only
            // DevTools attach to the tab.
            let span = tracing::info_span!("spare_context");
            match tracing::Instrument::instrument(session.make_context(), span).await {
                Ok(s) => spare = Some(s),
                Err(e) => tracing::warn!(error = %e, "could not prepare the next browser context"),
            }
        }
        let Session { client, browser, devtools, profile, touched, .. } = session;
        let touched = touched.into_inner().unwrap_or_default();
        let replaced = match self.idle.lock() {
            Ok(mut i) => i.replace(Idle { client, browser, devtools, profile, uses, touched, contexts, spare }),
            Err(_) => None,
        };
        if let Some(old) = replaced {
            end_browser(old.client, old.browser, old.devtools.as_deref()).await;
        }
    }

    pub fn config(&self) -> &BrowserConfig {
        &self.cfg
    }

    /// The chromedriver's URL, starting it or restarting it if it has died.
    pub async fn ensure(&self) -> Result<String, BrowserError> {
        let mut guard = self.proc.lock().await;
        if let Some(p) = guard.as_mut() {
            match p.child.try_wait() {
                Ok(None) => return Ok(format!("http://127.0.0.1:{}", p.port)),
                _ => {
                    tracing::warn!(pid = p.pid(), "chromedriver died; restarting");
                    self.forget_idle();
                }
            }
        }
        // Dropping the old one kills what is left of its group.
        *guard = None;
        let mut last = String::new();
        for _ in 0..3 {
            match self.spawn().await {
                Ok(p) => {
                    let url = format!("http://127.0.0.1:{}", p.port);
                    *guard = Some(p);
                    return Ok(url);
                }
                Err(e) => last = e.to_string(),
            }
        }
        Err(BrowserError::Driver(last))
    }

    /// The process id of the running chromedriver, if any (tests kill it).
    pub async fn pid(&self) -> Option<u32> {
        self.proc.lock().await.as_ref().map(|p| p.pid())
    }

    /// Drops the kept browser without talking to it (its chromedriver is gone or going).
    fn forget_idle(&self) {
        if let Ok(mut i) = self.idle.lock() {
            i.take();
        }
    }

    /// Stops chromedriver and every Chromium it started.
    pub async fn shutdown(&self) {
        self.forget_idle();
        if let Some(mut p) = self.proc.lock().await.take() {
            p.kill();
            // Waits for the leader, so it is gone when this returns.
            let _ = p.child.kill().await;
        }
    }

    async fn spawn(&self) -> Result<DriverProc, BrowserError> {
        let port = free_port().map_err(|e| BrowserError::Driver(format!("no free port: {e}")))?;
        let child = tokio::process::Command::new(&self.cfg.chromedriver)
            .arg(format!("--port={port}"))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .process_group(0)
            .kill_on_drop(true)
            .spawn()
            .map_err(|e| BrowserError::Driver(format!("cannot start {}: {e}", self.cfg.chromedriver.display())))?;
        let mut proc = DriverProc::new(child, port);
        let ready = tokio::time::timeout(self.cfg.start_timeout, async {
            loop {
                if let Ok(Some(status)) = proc.child.try_wait() {
                    return Err(BrowserError::Driver(format!("chromedriver exited at start: {status}")));
                }
                if tokio::net::TcpStream::connect(("127.0.0.1", port)).await.is_ok() {
                    return Ok(());
                }
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        })
        .await;
        match ready {
            Ok(Ok(())) => Ok(proc),
            Ok(Err(e)) => Err(e),
            // Dropping `proc` kills its group.
            Err(_) => Err(BrowserError::Driver(format!("chromedriver did not listen on port {port}"))),
        }
    }
}
/// Ends a WebDriver session and the browser it is attached to; bounded, errors ignored.
pub(super) async fn end_browser(client: Client, browser: BrowserProc, devtools: Option<&Connection>) {
    let _ = tokio::time::timeout(Duration::from_secs(5), client.close()).await;
    browser.stop(devtools).await;
}
