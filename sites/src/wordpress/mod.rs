//! STUB of the wordpress fixture site: compiles against the sites contract and
//! serves a placeholder page. To be replaced by the real module.

use std::sync::Arc;

use skillshift_common::skills::{Skill, Step};
use skillshift_common::Version;

use crate::{App, GeneratedTask};

/// STUB: a placeholder application.
struct Stub {
    version: Version,
}

impl App for Stub {
    fn router(self: Arc<Self>) -> axum::Router {
        let text = format!(
            "<!doctype html><title>wordpress {} (stub)</title><main><h1>wordpress stub</h1></main>",
            self.version
        );
        axum::Router::new().route("/", axum::routing::get(move || async move { axum::response::Html(text) }))
    }

    fn reset(&self) {}

    fn login_steps(&self) -> Vec<Step> {
        Vec::new()
    }
}

/// STUB: the application of `version`.
pub fn app(version: Version) -> Arc<dyn App> {
    Arc::new(Stub { version })
}

/// STUB: no tasks yet.
pub fn tasks(_version: Version) -> Vec<GeneratedTask> {
    Vec::new()
}

/// STUB: no skills yet.
pub fn skills() -> Vec<Skill> {
    Vec::new()
}
