//! The framework the fixture sites are built on, in a room of its own so no
//! site borrows another's scaffolding. Each site keeps its pages, data and
//! tasks; what they share lives here:
//!
//! * [`web`]: requests and responses. The axum-level helpers every site uses
//!   (the session cookie, redirects, pages) and, for the sites written as a
//!   pure function of a request (Magento, WordPress), [`web::Req`],
//!   [`web::Resp`] and the [`web::Handler`] that serves such a site as an
//!   [`App`](crate::App).
//! * [`state`]: such a site's seeded data and sessions behind one mutex,
//!   reset by cloning the seed, and the flash message a redirect carries.
//! * [`url`]: the URL encoder and the form and query decoder.
//! * [`rng`]: the seeded PRNG all seeded data comes from.
//! * [`paging`]: one page of a list.
//! * [`text`]: escaping, slugs, keyword matching and dates.
//! * [`layout`]: the HTML document shell and the current-page marker of
//!   navigation links.
//! * [`tasks`]: building tasks: step constructors, the evaluator shapes,
//!   intent templates, the round-robin that numbers the tasks, and the
//!   example skills.

pub mod layout;
pub mod paging;
pub mod rng;
pub mod state;
pub mod tasks;
pub mod text;
pub mod url;
pub mod web;
