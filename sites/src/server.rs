//! Serving site-versions over HTTP: one axum server per site-version on its
//! own port ([`serve`]), or all six on consecutive ports ([`serve_all`]), in
//! the order gitlab v1, gitlab v2, magento v1, magento v2, wordpress v1,
//! wordpress v2. Each returns a [`SiteHandle`] with the base URL and a
//! graceful shutdown; dropping the handle stops the server too.

use std::net::SocketAddr;
use std::sync::Arc;

use skillshift_common::{Site, Version};
use skillshift_taskcenter::TaskCenter;

use crate::env_ctrl::{self, Control};
use crate::App;

/// Why a site could not be served.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    #[error("cannot listen on {addr} for {image}: {source}")]
    Bind { addr: String, image: String, source: std::io::Error },
    #[error("invalid address '{0}'")]
    Address(String),
}

/// Why an in-process login ([`SiteHandle::login_cookies`]) gave no cookies.
#[derive(Debug, thiserror::Error)]
pub enum LoginError {
    /// A login step failed in the simulated browser.
    #[error("{image} login: {cause}")]
    Step { image: String, cause: crate::sim::SimError },
    #[error("{image} login set no cookie")]
    NoCookie { image: String },
    /// The blocking thread the login ran on did not finish.
    #[error("login task: {0}")]
    Task(tokio::task::JoinError),
}

/// A running site-version.
pub struct SiteHandle {
    pub site: Site,
    pub version: Version,
    /// `http://host:port`, without a trailing slash.
    pub base_url: String,
    pub addr: SocketAddr,
    pub digest: String,
    app: Arc<dyn App>,
    /// The router being served (it shares `app`), for calls in-process.
    router: axum::Router,
    /// The server task and in-process logins; cancelling it stops the server.
    tasks: TaskCenter,
}

impl SiteHandle {
    /// The image name, e.g. `gitlab-v2`.
    pub fn image(&self) -> String {
        self.site.image(self.version)
    }

    /// Restores the seeded state directly (the same as `POST /env-ctrl/reset`).
    pub fn reset(&self) {
        self.app.reset();
    }

    /// Logs in in-process, over the site's own HTTP handlers, exactly as its
    /// login steps do in a browser (load the sign-in page, fill the form,
    /// submit it), and returns the cookies the site set: what a browser
    /// needs to start an attempt signed in without loading the sign-in page.
    pub async fn login_cookies(&self) -> Result<Vec<(String, String)>, LoginError> {
        let router = self.router.clone();
        let (origin, steps, image) = (self.base_url.clone(), self.app.login_steps(), self.image());
        // The simulated browser holds parsed pages, which may not cross threads,
        // so it runs to the end on a blocking thread of this runtime.
        let runtime = tokio::runtime::Handle::current();
        self.tasks
            .spawn_blocking("login", move || {
                runtime.block_on(async move {
                    let mut browser = crate::sim::Browser::new(router, &origin);
                    for step in &steps {
                        browser.step(step).await.map_err(|cause| LoginError::Step { image: image.clone(), cause })?;
                    }
                    let cookies = browser.cookies();
                    if cookies.is_empty() {
                        return Err(LoginError::NoCookie { image });
                    }
                    Ok(cookies)
                })
            })
            .await
            .map_err(LoginError::Task)?
    }

    /// Stops accepting connections, lets in-flight requests finish and waits for the server task.
    pub async fn shutdown(self) {
        if !self.tasks.shutdown(std::time::Duration::from_secs(10)).await {
            eprintln!("skillshift-sites: {} did not stop within 10 s", self.image());
        }
    }
}

impl Drop for SiteHandle {
    fn drop(&mut self) {
        self.tasks.cancel();
    }
}

/// The full router of a site-version (site pages, env-ctrl, static script) and its app,
/// for serving or for calling in-process.
pub fn site_router(site: Site, version: Version) -> (axum::Router, Arc<dyn App>, String) {
    let app = crate::app(site, version);
    let digest = crate::digest::digest(site, version);
    let ctl = Control { site, version, digest: Arc::from(digest.as_str()), app: app.clone() };
    (env_ctrl::wrap(ctl), app, digest)
}

/// Serves one site-version on `addr` (port 0 picks a free port).
pub async fn serve(site: Site, version: Version, addr: SocketAddr) -> Result<SiteHandle, ServeError> {
    let image = site.image(version);
    let listener = tokio::net::TcpListener::bind(addr).await.map_err(|source| ServeError::Bind {
        addr: addr.to_string(),
        image: image.clone(),
        source,
    })?;
    let local = listener.local_addr().map_err(|source| ServeError::Bind { addr: addr.to_string(), image, source })?;
    let (router, app, digest) = site_router(site, version);
    let served = router.clone();
    let tasks = TaskCenter::new(format!("site {}", site.image(version)));
    tasks.spawn("serve", move |stop| async move {
        let server = axum::serve(listener, served).with_graceful_shutdown(stop.cancelled_owned());
        if let Err(e) = server.await {
            eprintln!("skillshift-sites: server on {local} stopped: {e}");
        }
    });
    Ok(SiteHandle { site, version, base_url: format!("http://{local}"), addr: local, digest, app, router, tasks })
}

/// Serves all six site-versions on `host`, at `base_port`, `base_port + 1`, ... (or on
/// free ports each when `base_port` is 0), in table order.
pub async fn serve_all(host: &str, base_port: u16) -> Result<Vec<SiteHandle>, ServeError> {
    let ip: std::net::IpAddr = match host {
        "localhost" => std::net::IpAddr::from([127, 0, 0, 1]),
        other => other.parse().map_err(|_| ServeError::Address(other.to_string()))?,
    };
    let mut handles = Vec::new();
    let mut offset = 0u16;
    for &site in Site::ALL {
        for &version in Version::ALL {
            let port = if base_port == 0 { 0 } else { base_port.saturating_add(offset) };
            handles.push(serve(site, version, SocketAddr::new(ip, port)).await?);
            offset += 1;
        }
    }
    Ok(handles)
}
