//! The framework over real sockets: `serve_all` puts six site-versions on
//! consecutive ports in table order, each with the env-ctrl surface, the
//! behaviours script, a login wall, and a reset that restores seeded state.

#![allow(clippy::unwrap_used)] // test helpers: a failed unwrap is a failed test

use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};

struct Reply {
    status: u16,
    headers: String,
    body: String,
}

/// One HTTP/1.1 request over a fresh connection, with a deadline.
async fn http(base: &str, method: &str, path: &str, cookie: Option<&str>, form: Option<&str>) -> Reply {
    let addr = base.trim_start_matches("http://");
    let work = async {
        let mut stream = tokio::net::TcpStream::connect(addr).await.expect("connect");
        let mut req = format!("{method} {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n");
        if let Some(c) = cookie {
            req.push_str(&format!("Cookie: {c}\r\n"));
        }
        let body = form.unwrap_or("");
        if form.is_some() {
            req.push_str("Content-Type: application/x-www-form-urlencoded\r\n");
        }
        req.push_str(&format!("Content-Length: {}\r\n\r\n{body}", body.len()));
        stream.write_all(req.as_bytes()).await.expect("write");
        let mut raw = Vec::new();
        stream.read_to_end(&mut raw).await.expect("read");
        let text = String::from_utf8_lossy(&raw).to_string();
        let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
        let status = head.split_whitespace().nth(1).and_then(|s| s.parse().ok()).unwrap_or(0);
        Reply { status, headers: head.to_string(), body: body.to_string() }
    };
    tokio::time::timeout(Duration::from_secs(10), work).await.expect("request within 10 s")
}

fn session_of(reply: &Reply) -> String {
    reply
        .headers
        .lines()
        .find_map(|l| l.strip_prefix("set-cookie: ").or_else(|| l.strip_prefix("Set-Cookie: ")))
        .and_then(|c| c.split(';').next())
        .expect("a session cookie")
        .to_string()
}

#[tokio::test]
async fn serve_all_runs_six_site_versions_with_env_ctrl() {
    let handles = skillshift_sites::serve_all("127.0.0.1", 0).await.expect("serve_all");
    let images: Vec<String> = handles.iter().map(|h| h.image()).collect();
    assert_eq!(images, ["gitlab-v1", "gitlab-v2", "magento-v1", "magento-v2", "wordpress-v1", "wordpress-v2"]);
    let digests: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../data/DIGESTS.json")).unwrap(),
    )
    .unwrap();
    for h in &handles {
        let status = http(&h.base_url, "GET", "/env-ctrl/status", None, None).await;
        assert_eq!(status.status, 200, "{}", h.image());
        let json: serde_json::Value = serde_json::from_str(&status.body).expect("status JSON");
        assert_eq!(json["site"], h.site.as_str());
        assert_eq!(json["version"], h.version.as_str());
        assert_eq!(json["ok"], true);
        assert_eq!(json["digest"], h.digest.as_str());
        assert_eq!(digests[h.image()], h.digest.as_str(), "DIGESTS.json is stale for {}", h.image());
        let js = http(&h.base_url, "GET", "/static/behaviors.js", None, None).await;
        assert!(js.body.contains("aria-expanded") && js.body.contains("data-opens"));
    }
    for h in handles {
        h.shutdown().await;
    }
}

#[tokio::test]
async fn consecutive_ports_from_a_base_port() {
    // Find a free block by binding port 0 once, then asking for the six ports after it.
    let probe = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let base = probe.local_addr().unwrap().port().saturating_add(7);
    drop(probe);
    let Ok(handles) = skillshift_sites::serve_all("127.0.0.1", base).await else {
        eprintln!("ports {base}.. are busy on this machine; skipping");
        return;
    };
    let ports: Vec<u16> = handles.iter().map(|h| h.addr.port()).collect();
    assert_eq!(ports, (base..base + 6).collect::<Vec<_>>());
}

#[tokio::test]
async fn gitlab_login_wall_state_change_and_reset() {
    let addr: std::net::SocketAddr = "127.0.0.1:0".parse().unwrap();
    let site =
        skillshift_sites::serve(skillshift_common::Site::Gitlab, skillshift_common::Version::V1, addr).await.unwrap();
    let base = site.base_url.clone();
    let anonymous = http(&base, "GET", "/a11yproject/a11yproject.com/-/issues", None, None).await;
    assert_eq!(anonymous.status, 303);
    assert!(anonymous.headers.to_lowercase().contains("location: /users/sign_in"));
    let bad = http(&base, "POST", "/users/sign_in", None, Some("username=byteblaze&password=wrong")).await;
    assert_eq!(bad.status, 401);
    assert!(bad.body.contains("Invalid login or password."));
    let login = http(&base, "POST", "/users/sign_in", None, Some("username=byteblaze&password=hello1234")).await;
    assert_eq!(login.status, 303);
    let cookie = session_of(&login);
    // Find an open issue, close it, see it closed, reset, see it open again (and the session gone).
    let tasks = skillshift_sites::tasks(skillshift_common::Site::Gitlab, skillshift_common::Version::V1);
    let close = tasks.iter().find(|t| t.task.intent_template_id == 7).unwrap();
    let issue = close.task.start_url.replace("__GITLAB__", "");
    let before = http(&base, "GET", &issue, Some(&cookie), None).await;
    assert!(before.body.contains(r#"id="issue-state" class="badge state-open">Open<"#));
    let posted = http(&base, "POST", &format!("{issue}/toggle_state"), Some(&cookie), Some("")).await;
    assert_eq!(posted.status, 303);
    let after = http(&base, "GET", &issue, Some(&cookie), None).await;
    assert!(after.body.contains(">Closed<") && after.body.contains(r#"role="status">Issue closed."#));
    let reset = http(&base, "POST", "/env-ctrl/reset", None, None).await;
    assert_eq!(reset.status, 200);
    let logged_out = http(&base, "GET", &issue, Some(&cookie), None).await;
    assert_eq!(logged_out.status, 303, "reset drops sessions");
    let again =
        session_of(&http(&base, "POST", "/users/sign_in", None, Some("username=byteblaze&password=hello1234")).await);
    let restored = http(&base, "GET", &issue, Some(&again), None).await;
    assert!(restored.body.contains(">Open<"), "reset restores the seeded state");
    site.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn login_cookies_open_the_login_wall_of_every_site_version() {
    let handles = skillshift_sites::serve_all("127.0.0.1", 0).await.unwrap();
    for h in &handles {
        let task = skillshift_sites::tasks(h.site, h.version)
            .into_iter()
            .find(|t| t.task.require_login)
            .map(|t| t.task.start_url.replace(h.site.placeholder(), ""))
            .map(|p| if p.is_empty() { "/".to_string() } else { p })
            .unwrap();
        let anonymous = http(&h.base_url, "GET", &task, None, None).await;
        assert_ne!(anonymous.status, 200, "{}: {task} is behind the login wall", h.image());
        let cookies = h.login_cookies().await.unwrap();
        let header = cookies.iter().map(|(k, v)| format!("{k}={v}")).collect::<Vec<_>>().join("; ");
        let signed_in = http(&h.base_url, "GET", &task, Some(&header), None).await;
        assert_eq!(signed_in.status, 200, "{}: {task} with {header}", h.image());
        // Each call is a new session, as a fresh browser's login would be.
        assert_ne!(h.login_cookies().await.unwrap(), cookies, "{}", h.image());
    }
}
