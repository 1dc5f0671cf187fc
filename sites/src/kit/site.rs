//! A site written as a pure function of a request (Magento, WordPress), in
//! one version. The site keeps only what is its own, as a [`Pages`]: its
//! seeded data, what it keeps per session, its request handler, its login
//! form and the screens v2 puts after it. [`Site`] holds the version and the
//! [`State`] (data and sessions behind one lock, reset by cloning the seed)
//! and is the [`App`] the framework serves, through [`web::router`].
//!
//! Both such sites sign in with the same admin account ([`ADMIN_USER`],
//! [`ADMIN_PASSWORD`]) on a form with a "Password" textbox, so their login
//! steps are built here ([`App::login_steps`]).

use std::marker::PhantomData;
use std::sync::{Arc, MutexGuard};

use skillshift_common::skills::Step;
use skillshift_common::Version;

use super::state::{Live, State};
use super::tasks::sign_in;
use super::web::{self, Req, Resp};
use crate::App;

/// The admin account's user name.
pub const ADMIN_USER: &str = "admin";
/// The admin account's password.
pub const ADMIN_PASSWORD: &str = "admin1234";

/// The login form the admin signs in on: its URL (site placeholder
/// allowed), the user textbox's name and the submit button's name.
pub struct LoginForm {
    pub url: &'static str,
    pub user_label: &'static str,
    pub button: &'static str,
}

/// What a site written as a pure function of a request provides.
pub trait Pages: Sized + 'static {
    /// The seeded data the pages read and change.
    type Data: Clone + Send + Sync + 'static;
    /// What the site keeps per session besides its flash.
    type Session: Send + 'static;
    /// Builds the data a fresh site starts with and every reset restores.
    const SEED: fn() -> Self::Data;
    /// Answers one request in `version` (the whole site as a function of the
    /// request and the live data and sessions).
    fn handle(version: Version, live: &mut Live<Self::Data, Self::Session>, req: &Req) -> Resp;
    /// The form the login steps fill.
    const LOGIN_FORM: LoginForm;
    /// The steps after the login form in `version` (the screens v2 adds).
    fn after_login(version: Version) -> Vec<Step>;

    /// The site of `version`, as the framework serves it.
    fn app(version: Version) -> Arc<dyn App> {
        Arc::new(Site::<Self>::new(version))
    }
}

/// One version of the site `P`, with its live data and sessions.
pub struct Site<P: Pages> {
    version: Version,
    state: State<P::Data, P::Session>,
    /// `P` only names the site; a `fn` keeps `Site` `Send` and `Sync` whatever `P` is.
    pages: PhantomData<fn() -> P>,
}

impl<P: Pages> Site<P> {
    pub fn new(version: Version) -> Self {
        Site { version, state: State::new((P::SEED)()), pages: PhantomData }
    }

    /// Answers one request.
    pub fn handle(&self, req: &Req) -> Resp {
        P::handle(self.version, &mut self.state.lock(), req)
    }

    /// The live data and sessions (for tests that look behind the pages).
    pub fn lock(&self) -> MutexGuard<'_, Live<P::Data, P::Session>> {
        self.state.lock()
    }
}

impl<P: Pages> App for Site<P> {
    fn router(self: Arc<Self>) -> axum::Router {
        web::router(move |req| self.handle(req))
    }

    fn reset(&self) {
        self.state.reset();
    }

    fn login_steps(&self) -> Vec<Step> {
        let form = &P::LOGIN_FORM;
        let mut steps = sign_in(form.url, form.user_label, ADMIN_USER, ADMIN_PASSWORD, form.button);
        steps.extend(P::after_login(self.version));
        steps
    }
}

#[cfg(test)]
impl<P: Pages> Site<P> {
    /// Posts the login `form` to `path`; the redirect's target and the new session's token.
    pub fn sign_in(&self, path: &str, form: &[(&str, &str)]) -> (String, String) {
        match self.handle(&Req::post(path, form, None)) {
            Resp::Redirect { to, cookie: Some(token) } if !token.is_empty() => (to, token),
            other => panic!("signing in at {path} opens no session: {other:?}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A site whose data counts the POSTs; a POST to `/login` opens a session.
    struct Counter;

    impl Pages for Counter {
        type Data = u32;
        type Session = ();

        const SEED: fn() -> u32 = || 7;

        fn handle(version: Version, live: &mut Live<u32, ()>, req: &Req) -> Resp {
            if req.post && req.path == "/login" {
                return Resp::Redirect { to: "/".into(), cookie: Some(live.open("c", 1, ())) };
            }
            if req.post {
                live.data += 1;
            }
            let session = if live.session_id(req).is_some() { "in" } else { "out" };
            Resp::Page(format!("{version} {} {session}", live.data))
        }

        const LOGIN_FORM: LoginForm = LoginForm { url: "__SITE__/login", user_label: "User", button: "Go" };

        fn after_login(version: Version) -> Vec<Step> {
            vec![Step::Goto { url: format!("__SITE__/{version}") }]
        }
    }

    #[test]
    fn a_site_serves_its_pages_in_its_version_and_reset_restores_the_seed() {
        let site = Site::<Counter>::new(Version::V2);
        let (to, token) = site.sign_in("/login", &[]);
        assert_eq!(to, "/");
        site.handle(&Req::post("/add", &[], Some(&token)));
        let page = site.handle(&Req::get("/", Some(&token)));
        assert_eq!(page, Resp::Page(format!("{} 8 in", Version::V2)));
        App::reset(&site);
        assert_eq!(site.handle(&Req::get("/", Some(&token))), Resp::Page(format!("{} 7 out", Version::V2)));
        let mut want = sign_in("__SITE__/login", "User", ADMIN_USER, ADMIN_PASSWORD, "Go");
        want.push(Step::Goto { url: format!("__SITE__/{}", Version::V2) });
        assert_eq!(App::login_steps(&site), want);
    }
}
