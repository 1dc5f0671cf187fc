//! The token check: the coordinator's own (`skillshift_coordinator::http`), so the
//! viewer's pages answer exactly as the coordinator's HTTP port does. With a
//! token configured, a request must carry it as `Authorization: Bearer <token>`
//! or, for a browser (links, images, server-sent events), as `?token=<token>`
//! in the URL; otherwise the answer is `401`.

pub use skillshift_coordinator::http::{presents, require_token};
