//! The live state of a site written as a pure function of a request: the
//! seeded data and the sessions behind one std mutex ([`State`]), reset by
//! cloning the seed; the flash message that a redirect carries to the
//! session's next page ([`Flash`]), and a page handler's outcome ([`Out`]).
//! A session is the site's own per-session state `S` plus the flash waiting
//! for its next page, which this module keeps.

use std::collections::HashMap;
use std::sync::{Mutex, MutexGuard};

use super::web::{Req, Resp};

/// A message shown once, on the page a redirect leads to.
#[derive(Debug, Clone, PartialEq)]
pub struct Flash {
    pub error: bool,
    pub text: String,
}

/// The outcome of a page handler: a response, or a redirect carrying a flash.
pub enum Out {
    Resp(Resp),
    Flash { to: String, flash: Flash },
}

impl From<Resp> for Out {
    fn from(r: Resp) -> Out {
        Out::Resp(r)
    }
}

/// Redirect to `to` with a success message.
pub fn ok(to: impl Into<String>, text: impl Into<String>) -> Out {
    Out::Flash { to: to.into(), flash: Flash { error: false, text: text.into() } }
}

/// Redirect to `to` with an error message.
pub fn err(to: impl Into<String>, text: impl Into<String>) -> Out {
    Out::Flash { to: to.into(), flash: Flash { error: true, text: text.into() } }
}

/// A site's seed and its live data and sessions.
pub struct State<D, S> {
    seed: D,
    /// A std mutex: every request holds it only while rendering one page from
    /// in-memory data, with no await inside.
    live: Mutex<Live<D, S>>,
}

/// The data and sessions as the requests left them.
pub struct Live<D, S> {
    pub data: D,
    /// Each session's own state and the flash waiting for its next page.
    sessions: HashMap<String, (S, Option<Flash>)>,
    next_session: u64,
}

impl<D: Clone, S> State<D, S> {
    pub fn new(seed: D) -> Self {
        let live = Live { data: seed.clone(), sessions: HashMap::new(), next_session: 1 };
        State { seed, live: Mutex::new(live) }
    }

    pub fn lock(&self) -> MutexGuard<'_, Live<D, S>> {
        // A poisoned lock only means a handler panicked mid-request; the data is still usable.
        self.live.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Restores the seeded data and drops every session.
    pub fn reset(&self) {
        let mut live = self.lock();
        live.data = self.seed.clone();
        live.sessions.clear();
    }
}

impl<D, S> Live<D, S> {
    /// The request's session id, if it names a live session.
    pub fn session_id(&self, req: &Req) -> Option<String> {
        req.session.as_ref().filter(|s| self.sessions.contains_key(*s)).cloned()
    }

    /// The site's own state of session `id`.
    pub fn session(&mut self, id: &str) -> Option<&mut S> {
        self.sessions.get_mut(id).map(|(s, _)| s)
    }

    /// Opens a session and returns its token: `prefix`, the session counter
    /// times `mix` in hex, and the counter.
    pub fn open(&mut self, prefix: &str, mix: u64, session: S) -> String {
        let n = self.next_session;
        let token = format!("{prefix}{:08x}{n}", n.wrapping_mul(mix));
        self.next_session += 1;
        self.sessions.insert(token.clone(), (session, None));
        token
    }

    pub fn close(&mut self, id: &str) {
        self.sessions.remove(id);
    }

    /// The flash waiting for this page of the session; a POST leaves it for the page it redirects to.
    pub fn take_flash(&mut self, id: &str, req: &Req) -> Option<Flash> {
        if req.post {
            return None;
        }
        self.sessions.get_mut(id).and_then(|(_, flash)| flash.take())
    }

    /// The response to a handler's outcome; a flash waits in the session for the next page.
    pub fn finish(&mut self, id: &str, out: Out) -> Resp {
        match out {
            Out::Resp(r) => r,
            Out::Flash { to, flash } => {
                if let Some((_, waiting)) = self.sessions.get_mut(id) {
                    *waiting = Some(flash);
                }
                Resp::redirect(to)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_flash_waits_for_the_next_get_and_reset_drops_sessions() {
        let state: State<Vec<u32>, bool> = State::new(vec![1]);
        let mut live = state.lock();
        let token = live.open("t", 3, false);
        assert_eq!(token, "t000000031");
        let get = Req::get("/x", Some(&token));
        assert_eq!(live.session_id(&get).as_deref(), Some(token.as_str()));
        assert_eq!(live.finish(&token, ok("/next", "Saved.")), Resp::redirect("/next"));
        let post = Req::post("/x", &[], Some(&token));
        assert_eq!(live.take_flash(&token, &post), None, "a POST leaves the flash waiting");
        assert_eq!(live.take_flash(&token, &get).map(|f| f.text), Some("Saved.".to_string()));
        assert_eq!(live.take_flash(&token, &get), None, "shown once");
        live.data.push(2);
        drop(live);
        state.reset();
        let live = state.lock();
        assert_eq!((live.data.as_slice(), live.session_id(&get)), (&[1][..], None));
    }
}
