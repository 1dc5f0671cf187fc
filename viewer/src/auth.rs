//! The token check: the one the coordinator's HTTP port uses too
//! (`skillshift_http::token`), so the viewer's pages answer exactly as that
//! port does. With a token configured, a request must carry it as
//! `Authorization: Bearer <token>` or, for a browser (links, images,
//! server-sent events), as `?token=<token>` in the URL; otherwise the answer
//! is `401`.

pub use skillshift_http::token::{presents, require_token};
