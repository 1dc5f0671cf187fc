//! The Magento admin fixture (2.3/2.4.2 as v1, 2.4.3+ as v2; see
//! `sites/CHANGES.md` and shifts.md M1-M10): login (v2 with a two-factor
//! step), dashboard, the admin menu, products, categories, orders, customers,
//! reviews, CMS pages, reports, and a small storefront for CMS and product
//! pages. The site is a pure function of a request (a
//! [`crate::kit::web::Handler`]); its store and sessions live in a
//! [`crate::kit::state::State`], whose `reset` swaps in a clone of the seed.
//!
//! * [`data`]: the seeded store; [`ui`]: page chrome and grid helpers.
//! * `pages_*`: the pages by admin area; [`tasks`] and [`skills`]: the task
//!   generator and the example skills.

use std::sync::Arc;

use skillshift_common::skills::Step;
use skillshift_common::Version;

use crate::kit::state::{Flash, Live, State};
use crate::kit::tasks::{click, fill, sign_in};
use crate::kit::text::esc;
use crate::kit::web::{Handler, Req, Resp};
use crate::App;

pub mod data;
mod pages_catalog;
mod pages_content;
mod pages_customers;
mod pages_sales;
pub mod skills;
pub mod tasks;
pub mod ui;

use crate::kit::state::{err, ok, Out};
use data::{money, Store};

pub const USERNAME: &str = "admin";
pub const PASSWORD: &str = "admin1234";
/// The fixed authenticator code of v2's two-factor step.
pub const TFA_CODE: &str = "424242";

/// What the admin keeps per session besides its flash.
#[derive(Debug, Clone, Default)]
struct Session {
    /// v2: the two-factor step is done (always true in v1).
    verified: bool,
}

type Inner = Live<Store, Session>;

/// One version of the Magento admin.
pub struct Magento {
    version: Version,
    state: State<Store, Session>,
}

/// What a page handler sees: the store, the version and the session's flash.
pub struct Ctx<'a> {
    pub version: Version,
    pub store: &'a mut Store,
    pub flash: Option<Flash>,
}

impl Ctx<'_> {
    pub fn v2(&self) -> bool {
        self.version == Version::V2
    }
    /// A full admin page.
    pub fn page(&self, title: &str, actions: &str, body: &str) -> Resp {
        Resp::Page(ui::page(self.version, title, self.flash.as_ref(), actions, body))
    }
}

impl Magento {
    pub fn new(version: Version) -> Magento {
        Magento { version, state: State::new(Store::seed()) }
    }

    fn login(&self, req: &Req, inner: &mut Inner, session: Option<&str>) -> Resp {
        if req.post {
            let good = req.f("login[username]") == Some(USERNAME) && req.f("login[password]") == Some(PASSWORD);
            if !good {
                return Resp::Page(login_page(Some("The account sign-in was incorrect or your account is disabled temporarily. Please wait and try again later.")));
            }
            let verified = self.version == Version::V1;
            let token = inner.open("mage", 0x9E37_79B9, Session { verified });
            let to = if verified { "/admin/admin/dashboard/" } else { "/admin/tfa/tfa/index/" };
            return Resp::Redirect { to: to.into(), cookie: Some(token) };
        }
        match session {
            Some(_) => Resp::redirect("/admin/admin/dashboard/"),
            None => Resp::Page(login_page(None)),
        }
    }

    /// v2's two-factor step (M1): "Authenticator code" and "Confirm".
    fn two_factor(&self, req: &Req, inner: &mut Inner, sid: &str) -> Resp {
        if self.version == Version::V1 {
            return Resp::redirect("/admin/admin/dashboard/");
        }
        let mut error = None;
        if req.post {
            if req.f("tfa_code").map(str::trim) == Some(TFA_CODE) {
                if let Some(s) = inner.session(sid) {
                    s.verified = true;
                }
                return Resp::redirect("/admin/admin/dashboard/");
            }
            error = Some("Invalid code.");
        }
        let alert =
            error.map(|e| format!("<div role=\"alert\" class=\"message message-error\">{e}</div>")).unwrap_or_default();
        Resp::Page(ui::bare(
            "Google Authenticator / Magento Admin",
            &format!(
                "<main class=\"login-box\"><h1>Google Authenticator</h1>{alert}\
                 <p>Please enter the six-digit code from your authenticator app.</p>\
                 <form method=\"post\" action=\"/admin/tfa/tfa/index/\">\
                 <label for=\"tfa_code\">Authenticator code</label> <input type=\"text\" id=\"tfa_code\" name=\"tfa_code\" autocomplete=\"one-time-code\">\
                 <button type=\"submit\" class=\"primary\">Confirm</button></form></main>"
            ),
        ))
    }
}

fn login_page(error: Option<&str>) -> String {
    let alert = error
        .map(|e| format!("<div role=\"alert\" class=\"message message-error\">{}</div>", esc(e)))
        .unwrap_or_default();
    ui::bare(
        "Magento Admin",
        &format!(
            "<main class=\"login-box\"><h1>Welcome, please sign in</h1>{alert}\
             <form method=\"post\" action=\"/admin/\" aria-label=\"Sign in\">\
             <div class=\"admin__field\"><label for=\"username\">Username</label>\
             <input type=\"text\" id=\"username\" name=\"login[username]\" autocomplete=\"username\"></div>\
             <div class=\"admin__field\"><label for=\"login\">Password</label>\
             <input type=\"password\" id=\"login\" name=\"login[password]\" autocomplete=\"current-password\"></div>\
             <button type=\"submit\" class=\"primary\">Sign in</button></form>\
             <p><a href=\"/admin/admin/auth/forgotpassword/\">Forgot your password?</a></p></main>"
        ),
    )
}

/// Dispatches an admin path to its page.
fn route(ctx: &mut Ctx, req: &Req, path: &str) -> Out {
    let parts: Vec<&str> = path.trim_start_matches("/admin/").split('/').collect();
    let id_after = |key: &str| {
        parts.iter().position(|p| *p == key).and_then(|i| parts.get(i + 1)).and_then(|v| v.parse::<u32>().ok())
    };
    match parts.as_slice() {
        ["admin", "dashboard", ..] => dashboard(ctx).into(),
        ["catalog", ..] => pages_catalog::route(ctx, req, &parts, id_after("id"), id_after("parent")),
        ["sales", ..] => pages_sales::route(ctx, req, &parts, id_after("order_id")),
        ["customer", ..] | ["loginascustomer", ..] | ["loginascustomer_log", ..] => {
            pages_customers::route(ctx, req, &parts, id_after("id").or(id_after("customer_id")))
        }
        ["review", ..]
        | ["cms", ..]
        | ["reports", ..]
        | ["pagebuilder", ..]
        | ["media_gallery", ..]
        | ["search", ..] => pages_content::route(ctx, req, path, &parts, id_after("id").or(id_after("page_id"))),
        _ => generic(ctx, path),
    }
}

/// A menu page this fixture does not model in depth: its heading and an empty grid.
pub fn generic(ctx: &Ctx, path: &str) -> Out {
    let Some(label) = ui::menu_label(ctx.version, &format!("{path}/")) else {
        return Resp::NotFound(ui::page(
            ctx.version,
            "404 Error",
            None,
            "",
            "<h2>Page not found.</h2><p><a href=\"/admin/admin/dashboard/\">Go to the Dashboard</a></p>",
        ))
        .into();
    };
    let body = format!(
        "{}{}",
        ui::pager(&format!("{path}/"), "", 1, 1, 0),
        ui::grid(label, &[("id", "ID"), ("name", "Name")], &[], 0)
    );
    ctx.page(label, "", &body).into()
}

fn dashboard(ctx: &Ctx) -> Resp {
    let s = &*ctx.store;
    let live: Vec<_> = s.orders.iter().filter(|o| o.status != "Canceled").collect();
    let lifetime: u64 = live.iter().map(|o| o.grand_total()).sum();
    let avg = if live.is_empty() { 0 } else { lifetime / live.len() as u64 };
    let rows: Vec<(String, Vec<String>)> = s
        .orders
        .iter()
        .rev()
        .take(5)
        .map(|o| {
            let c = s.customer(o.customer).map(|c| c.name()).unwrap_or_default();
            let items: u32 = o.items.iter().map(|i| i.qty).sum();
            (format!("last-{}", o.id), vec![esc(&c), items.to_string(), money(o.grand_total())])
        })
        .collect();
    let body = format!(
        "<section aria-labelledby=\"totals-h\"><h2 id=\"totals-h\">Totals</h2><div class=\"dashboard-totals\">\
         <p>Lifetime Sales <output aria-label=\"Lifetime Sales\">{}</output></p>\
         <p>Average Order <output aria-label=\"Average Order\">{}</output></p>\
         <p>Customers <output aria-label=\"Customers\">{}</output></p></div></section>\
         <section aria-labelledby=\"last-h\"><h2 id=\"last-h\">Last Orders</h2>{}</section>",
        money(lifetime),
        money(avg),
        s.customers.len(),
        ui::grid("Last Orders", &[("customer", "Customer"), ("items", "Items"), ("total", "Total")], &rows, 0)
    );
    ctx.page("Dashboard", "", &body)
}

impl Handler for Magento {
    fn handle(&self, req: &Req) -> Resp {
        let mut inner = self.state.lock();
        let inner = &mut *inner;
        let path = req.path.trim_end_matches('/').to_string();
        let path = if path.is_empty() { "/".to_string() } else { path };
        let session = inner.session_id(req);
        // Public pages: the admin login, the storefront.
        if path == "/admin" || path == "/admin/admin" || path == "/admin/admin/index/index" {
            return self.login(req, inner, session.as_deref());
        }
        if !path.starts_with("/admin") {
            return pages_content::storefront(&inner.data, &path);
        }
        let Some(sid) = session else { return Resp::redirect("/admin/") };
        if path == "/admin/admin/auth/logout" {
            inner.close(&sid);
            return Resp::Redirect { to: "/admin/".into(), cookie: Some(String::new()) };
        }
        if path == "/admin/tfa/tfa/index" {
            return self.two_factor(req, inner, &sid);
        }
        if !inner.session(&sid).is_some_and(|s| s.verified) {
            return Resp::redirect("/admin/tfa/tfa/index/");
        }
        let flash = inner.take_flash(&sid, req);
        let mut ctx = Ctx { version: self.version, store: &mut inner.data, flash };
        let out = route(&mut ctx, req, &path);
        inner.finish(&sid, out)
    }

    fn reset(&self) {
        self.state.reset();
    }

    fn login_steps(&self) -> Vec<Step> {
        login_steps(self.version)
    }
}

/// The steps that sign in from a fresh browser (v2 adds the two-factor step).
pub fn login_steps(version: Version) -> Vec<Step> {
    let mut steps = sign_in("__MAGENTO__/admin/", "Username", USERNAME, PASSWORD, "Sign in");
    if version == Version::V2 {
        steps.push(fill("textbox", "Authenticator code", TFA_CODE));
        steps.push(click("button", "Confirm"));
    }
    steps
}

/// The application of `version`.
pub fn app(version: Version) -> Arc<dyn App> {
    Arc::new(Magento::new(version))
}

#[cfg(test)]
mod tests {
    use skillshift_common::Version;

    use super::*;

    #[test]
    fn admin_pages_need_a_session_and_v2_the_second_factor() {
        for v in [Version::V1, Version::V2] {
            let m = Magento::new(v);
            let r = m.handle(&Req::get("/admin/sales/order/", None));
            assert_eq!(r, Resp::redirect("/admin/"), "{v}: no session");
            let r =
                m.handle(&Req::post("/admin/", &[("login[username]", "admin"), ("login[password]", "wrong")], None));
            assert!(matches!(&r, Resp::Page(h) if h.contains("role=\"alert\"")), "{v}: a bad password is refused");
            let r =
                m.handle(&Req::post("/admin/", &[("login[username]", USERNAME), ("login[password]", PASSWORD)], None));
            let Resp::Redirect { to, cookie: Some(token) } = r else { panic!("{v}: login sets a session") };
            let page = m.handle(&Req::get("/admin/admin/dashboard/", Some(&token)));
            if v == Version::V1 {
                assert_eq!(to, "/admin/admin/dashboard/");
                assert!(matches!(page, Resp::Page(_)));
            } else {
                assert_eq!(to, "/admin/tfa/tfa/index/");
                assert_eq!(page, Resp::redirect("/admin/tfa/tfa/index/"), "v2 waits for the code");
                let wrong = m.handle(&Req::post("/admin/tfa/tfa/index/", &[("tfa_code", "000000")], Some(&token)));
                assert!(matches!(&wrong, Resp::Page(h) if h.contains("Invalid code")));
                let ok = m.handle(&Req::post("/admin/tfa/tfa/index/", &[("tfa_code", TFA_CODE)], Some(&token)));
                assert_eq!(ok, Resp::redirect("/admin/admin/dashboard/"));
                assert!(matches!(m.handle(&Req::get("/admin/admin/dashboard/", Some(&token))), Resp::Page(_)));
            }
        }
    }

    #[test]
    fn reset_restores_the_seed_and_drops_sessions() {
        let m = Magento::new(Version::V1);
        let Resp::Redirect { cookie: Some(token), .. } =
            m.handle(&Req::post("/admin/", &[("login[username]", USERNAME), ("login[password]", PASSWORD)], None))
        else {
            panic!("login")
        };
        let before = m.state.lock().data.order(1).map(|o| o.status.clone());
        let open = m.state.lock().data.orders.iter().find(|o| o.status == "Pending").map(|o| o.id).unwrap_or(1);
        let r = m.handle(&Req::post(&format!("/admin/sales/order/cancel/order_id/{open}/"), &[], Some(&token)));
        assert_eq!(r, Resp::redirect(format!("/admin/sales/order/view/order_id/{open}/")));
        assert_eq!(m.state.lock().data.order(open).map(|o| o.status.as_str()), Some("Canceled"));
        App::reset(&m);
        assert_ne!(m.state.lock().data.order(open).map(|o| o.status.as_str()), Some("Canceled"));
        assert_eq!(m.state.lock().data.order(1).map(|o| o.status.clone()), before);
        assert_eq!(m.handle(&Req::get("/admin/sales/order/", Some(&token))), Resp::redirect("/admin/"));
    }
}
