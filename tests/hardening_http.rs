//! The HTTP servers against hostile clients (issue 30, items 4 and 9), as
//! real processes: the coordinator's `--http` port caps its connections and
//! closes silent ones while gRPC keeps answering, caps event streams per
//! client, and `skillshift view` serves nothing outside its folder through a
//! symbolic link and answers a rebound `Host` with `421`.

mod support;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use support::{Options, Sandbox, BIN};

/// Whether the server has closed `s` (a read ends, or fails as reset); waits up to `wait`.
fn closed_within(s: &mut TcpStream, wait: Duration) -> bool {
    s.set_read_timeout(Some(wait)).expect("read timeout");
    let mut b = [0u8; 1];
    match s.read(&mut b) {
        Ok(0) => true,
        Ok(_) => false,
        Err(e) => !matches!(e.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut),
    }
}

#[test]
fn silent_connections_past_the_cap_are_closed_at_once_the_rest_by_the_idle_timeout_and_grpc_answers_meanwhile() {
    let opts = Options {
        http: true,
        coordinator_args: ["--http-max-connections", "100", "--http-idle-timeout-s", "3"].map(String::from).to_vec(),
        ..Options::default()
    };
    let sb = Sandbox::start_with(0, 0, opts);
    let http = sb.http_addr.clone().expect("http address");
    let mut silent: Vec<TcpStream> = (0..300).map(|_| TcpStream::connect(&http).expect("connect")).collect();

    // A gRPC call while they are open: it answers.
    let out = sb.sweep(&["list"]);
    assert!(
        out.status.success(),
        "sweep list with 300 silent http connections: {}",
        String::from_utf8_lossy(&out.stderr)
    );

    // Past the cap of 100, each is closed at once; the 100 held are closed by the idle timeout (3 s).
    // Every one of them ends; none is left open.
    let deadline = Instant::now() + Duration::from_secs(60);
    let mut open = 0;
    for s in &mut silent {
        let left = deadline.saturating_duration_since(Instant::now()).max(Duration::from_millis(1));
        if !closed_within(s, left) {
            open += 1;
        }
    }
    assert_eq!(open, 0, "{open} of 300 silent connections are still open after a minute");
    // And the port serves the next client.
    let (status, body) = support::http_get(&http, "/healthz").expect("healthz answers");
    assert_eq!((status, body.as_str()), (200, "ok\n"));
}

#[test]
fn a_client_holds_at_most_four_event_streams() {
    let sb = Sandbox::start_with(0, 0, Options { http: true, ..Options::default() });
    let http = sb.http_addr.clone().expect("http address");
    let open = |_: usize| -> (TcpStream, String) {
        let mut s = TcpStream::connect(&http).expect("connect");
        s.set_read_timeout(Some(Duration::from_secs(20))).expect("timeout");
        write!(s, "GET /api/events?token=sandbox-token HTTP/1.1\r\nHost: {http}\r\n\r\n").expect("send");
        let mut line = String::new();
        BufReader::new(s.try_clone().expect("clone")).read_line(&mut line).expect("status line");
        (s, line.trim_end().to_string())
    };
    let streams: Vec<(TcpStream, String)> = (0..5).map(open).collect();
    let lines: Vec<&str> = streams.iter().map(|(_, l)| l.as_str()).collect();
    assert_eq!(
        lines,
        ["HTTP/1.1 200 OK"; 4].iter().copied().chain(["HTTP/1.1 429 Too Many Requests"]).collect::<Vec<_>>()
    );
    // One closes: its slot is free again (the server notices at its next write, a keep-alive within 15 s).
    drop(streams);
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let again: Vec<(TcpStream, String)> = (0..4).map(open).collect();
        if again.iter().all(|(_, l)| l == "HTTP/1.1 200 OK") {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "closed streams never gave their slots back: {:?}",
            again.iter().map(|x| &x.1).collect::<Vec<_>>()
        );
        drop(again);
        std::thread::sleep(Duration::from_millis(500));
    }
}

/// `skillshift view DIR` on a free loopback port; the child and its address.
fn view(dir: &std::path::Path) -> (std::process::Child, String) {
    let mut child = Command::new(BIN)
        .args(["view", dir.to_str().expect("utf8"), "--listen", "127.0.0.1:0"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("start view");
    let mut first = String::new();
    BufReader::new(child.stdout.take().expect("stdout")).read_line(&mut first).expect("first line");
    let addr = first.trim_end().strip_prefix("http://").and_then(|r| r.split('/').next()).expect("url").to_string();
    (child, addr)
}

/// The status line and body of `GET path` with `host` as its Host header.
fn get(addr: &str, host: &str, path: &str) -> (String, String) {
    let mut s = TcpStream::connect(addr).expect("connect");
    s.set_read_timeout(Some(Duration::from_secs(20))).expect("timeout");
    write!(s, "GET {path} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n").expect("send");
    let mut raw = Vec::new();
    s.read_to_end(&mut raw).expect("read");
    let raw = String::from_utf8_lossy(&raw).into_owned();
    let (head, body) = raw.split_once("\r\n\r\n").unwrap_or((&raw, ""));
    (head.lines().next().unwrap_or("").to_string(), body.to_string())
}

fn trajectory_json(uid: &str) -> String {
    serde_json::json!({
        "schema": "skillshift.trajectory/1",
        "key": {"sweep": "sw-links", "treatment": "ASI", "uid": uid, "condition": "src", "rep": 0, "attempt": 0},
        "intent": "outside the export", "start_url": "http://x/", "agent": "skills", "model": null,
        "steps": [], "score": null, "outcome": "failure", "failure_category": null, "error": null
    })
    .to_string()
}

#[test]
fn view_answers_404_for_a_link_out_of_its_folder_and_421_for_a_host_that_is_not_loopback() {
    let root = tempfile::tempdir().expect("tempdir");
    let dir = root.path().join("export");
    let outside = root.path().join("outside");
    std::fs::create_dir_all(dir.join("trajectories/ASI")).expect("dirs");
    std::fs::create_dir_all(dir.join("trajectories/screenshots")).expect("dirs");
    std::fs::create_dir_all(&outside).expect("dirs");
    let record = |task: u32| {
        format!(
            r#"{{"uid":"skillshift.gitlab.v1.{task}","site":"gitlab","condition":"src","success":false,"steps":0,"skill_calls":null,"skill_failures":null,"outcome":"failure","treatment":"ASI","sweep":"sw-links","trajectory":"trajectories/ASI/skillshift.gitlab.v1.{task}.src.0.0.json"}}"#
        )
    };
    std::fs::write(dir.join("per_task.jsonl"), format!("{}\n{}\n", record(1), record(2))).expect("records");
    // Task 1's trajectory is inside; task 2's is a link to a file outside the folder.
    std::fs::write(
        dir.join("trajectories/ASI/skillshift.gitlab.v1.1.src.0.0.json"),
        trajectory_json("skillshift.gitlab.v1.1"),
    )
    .expect("inside");
    std::fs::write(outside.join("t.json"), trajectory_json("skillshift.gitlab.v1.2")).expect("outside");
    std::os::unix::fs::symlink(
        outside.join("t.json"),
        dir.join("trajectories/ASI/skillshift.gitlab.v1.2.src.0.0.json"),
    )
    .expect("link");
    // A screenshot inside, and one that links to /etc/passwd.
    let (inside_png, passwd) = ("a".repeat(64), "b".repeat(64));
    std::fs::write(dir.join(format!("trajectories/screenshots/{inside_png}.png")), b"\x89PNG inside").expect("png");
    std::os::unix::fs::symlink("/etc/passwd", dir.join(format!("trajectories/screenshots/{passwd}.png")))
        .expect("link");

    let (mut child, addr) = view(&dir);
    let attempt = |task: u32| {
        format!(
            "/api/attempt?sweep=sw-links&treatment=ASI&uid=skillshift.gitlab.v1.{task}&condition=src&rep=0&attempt=0"
        )
    };
    let inside = get(&addr, &addr, &attempt(1));
    let linked = get(&addr, &addr, &attempt(2));
    let shot_inside = get(&addr, &addr, &format!("/api/screenshot?sweep=sw-links&sha={inside_png}"));
    let shot_passwd = get(&addr, &addr, &format!("/api/screenshot?sweep=sw-links&sha={passwd}"));
    let port = addr.rsplit(':').next().expect("port");
    let rebound = get(&addr, &format!("attacker.example:{port}"), "/api/sweeps");
    let named = get(&addr, &format!("localhost:{port}"), "/api/sweeps");
    let _ = child.kill();
    let _ = child.wait();

    assert!(inside.0.starts_with("HTTP/1.1 200"), "{inside:?}");
    assert!(linked.0.starts_with("HTTP/1.1 404"), "a trajectory linked from outside: {linked:?}");
    assert!(!linked.1.contains("outside the export"), "{linked:?}");
    assert!(shot_inside.0.starts_with("HTTP/1.1 200"), "{shot_inside:?}");
    assert!(shot_passwd.0.starts_with("HTTP/1.1 404"), "a screenshot linked to /etc/passwd: {shot_passwd:?}");
    assert!(!shot_passwd.1.contains("root:"), "{shot_passwd:?}");
    assert!(rebound.0.starts_with("HTTP/1.1 421"), "a rebound host: {rebound:?}");
    assert!(rebound.1.contains("'attacker.example:"), "{rebound:?}");
    assert!(named.0.starts_with("HTTP/1.1 200"), "localhost: {named:?}");
}
