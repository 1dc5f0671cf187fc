//! Observation cost against page size (`skillshift bench pages`; figures in docs/performance.md):
//! generated pages of about 200, 1,000, 5,000 and 20,000 accessibility nodes, served from loopback
//! and observed in the browser a worker starts, each observation split into Chrome's part
//! (`Accessibility.getFullAXTree`, its answer unread) and ours (reading the answer into nodes,
//! rendering WebArena's text).
//!
//! The page is a toolbar (ten links and a search box) over a table whose rows each hold a link, a
//! text cell and a button; the number of rows is found by measuring, as Chrome decides how many
//! nodes a row makes.

use std::time::{Duration, Instant};

use serde_json::{json, Value};
use skillshift_taskcenter::TaskCenter;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::axtree::{AxTree, Observer};
use crate::bench::p50_p90;
use crate::browser::{BrowserError, Driver, Session};

/// The most table rows a generated page is asked for (a bound on what the loopback server builds).
pub const MAX_ROWS: usize = 50_000;

/// One page size's timings.
#[derive(Debug, Clone, Default)]
pub struct SizeRun {
    /// The size asked for, in AX nodes.
    pub target: usize,
    /// The size got: nodes in Chrome's answer.
    pub nodes: usize,
    pub rows: usize,
    /// Characters of the rendered observation.
    pub chars: usize,
    /// Chrome's part: the call, its answer unread.
    pub chrome: Vec<Duration>,
    /// Ours: the answer read into nodes.
    pub parse: Vec<Duration>,
    /// Ours: WebArena's text rendered from the nodes.
    pub render: Vec<Duration>,
    /// A whole observation as an attempt takes it (`axtree::Observer::observe`).
    pub observe: Vec<Duration>,
}

impl SizeRun {
    pub fn to_json(&self) -> Value {
        let pair = p50_p90;
        json!({
            "target": self.target, "nodes": self.nodes, "rows": self.rows, "chars": self.chars,
            "chrome_ms": pair(&self.chrome), "parse_ms": pair(&self.parse), "render_ms": pair(&self.render),
            "observe_ms": pair(&self.observe),
        })
    }
}

/// The generated page with `rows` table rows.
pub fn page(rows: usize) -> String {
    let mut s = String::with_capacity(200 + rows * 150);
    s.push_str("<!doctype html><html><head><title>Rows</title></head><body><nav aria-label=\"Main\">");
    for i in 0..10 {
        s.push_str(&format!("<a href=\"#s{i}\">Section {i}</a> "));
    }
    s.push_str("<input type=\"search\" aria-label=\"Search\"></nav><main><h1>Items</h1><table>");
    s.push_str("<tr><th>Name</th><th>Owner</th><th>Actions</th></tr>");
    for i in 0..rows {
        s.push_str(&format!(
            "<tr><td><a href=\"#r{i}\">Item {i}</a></td><td>owner {i}</td><td><button>Edit {i}</button></td></tr>"
        ));
    }
    s.push_str("</table></main></body></html>");
    s
}

/// The rows `GET /?rows=N` asks for, within [`MAX_ROWS`]; none for any other request line.
fn rows_asked(request_line: &str) -> Option<usize> {
    let target = request_line.strip_prefix("GET ")?.split(' ').next()?;
    let n: usize = target.strip_prefix("/?rows=")?.parse().ok()?;
    (n <= MAX_ROWS).then_some(n)
}

/// Serves [`page`] on a free loopback port, one response per connection; returns its base URL.
async fn serve(tasks: &TaskCenter) -> std::io::Result<String> {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let base = format!("http://{}", listener.local_addr()?);
    let conns = tasks.clone();
    tasks.spawn("bench-pages", move |stop| async move {
        loop {
            let (mut conn, _) = tokio::select! {
                accepted = listener.accept() => match accepted {
                    Ok(c) => c,
                    Err(_) => continue,
                },
                _ = stop.cancelled() => return,
            };
            conns.spawn("bench-pages-conn", move |_| async move {
                // A request line and headers fit in 8 KiB; more is not a request of ours.
                let mut buf = vec![0u8; 8192];
                let n = conn.read(&mut buf).await.unwrap_or(0);
                let head = String::from_utf8_lossy(&buf[..n]);
                let response = match rows_asked(head.lines().next().unwrap_or("")) {
                    Some(rows) => {
                        let body = page(rows);
                        format!(
                            "HTTP/1.1 200 OK\r\ncontent-type: text/html; charset=utf-8\r\ncontent-length: {}\r\n\
                             connection: close\r\n\r\n{body}",
                            body.len()
                        )
                    }
                    None => "HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\nconnection: close\r\n\r\n".to_string(),
                };
                let _ = conn.write_all(response.as_bytes()).await;
                let _ = conn.shutdown().await;
            });
        }
    });
    Ok(base)
}

/// Chrome's answer, timed, and the node count.
async fn chrome_tree(session: &Session) -> Result<(crate::cdp::Answer, Duration), BrowserError> {
    let t = Instant::now();
    let answer = session
        .cdp_raw_within("Accessibility.getFullAXTree", json!({}), session.call_timeout().max(Duration::from_secs(60)))
        .await?;
    Ok((answer, t.elapsed()))
}

fn read(answer: &crate::cdp::Answer) -> Result<AxTree, BrowserError> {
    AxTree::from_answer(answer)
        .map_err(|e| BrowserError::cdp("Accessibility.getFullAXTree", format!("unreadable: {e}")))
}

/// For each target size: finds the rows that give about that many nodes (within 5%, three tries),
/// then times `rounds` observations.
pub async fn run(driver: &Driver, targets: &[usize], rounds: usize) -> Result<Vec<SizeRun>, BrowserError> {
    let tasks = TaskCenter::new("bench-pages");
    let base = serve(&tasks).await.map_err(|e| BrowserError::Session(format!("serving the generated page: {e}")))?;
    let session = driver.checkout().await?;
    let mut out = Vec::new();
    // The session's one observer, as an attempt has one.
    let observer = Observer::default();
    let result = async {
        for &target in targets {
            // About eight nodes a row: a first guess, then scaled by what Chrome made of it.
            let mut rows = target.saturating_sub(40) / 8;
            let mut nodes = 0;
            for _ in 0..3 {
                session.goto(&format!("{base}/?rows={}", rows.min(MAX_ROWS))).await?;
                nodes = read(&chrome_tree(&session).await?.0)?.nodes.len();
                if nodes.abs_diff(target) * 20 <= target || nodes == 0 {
                    break;
                }
                rows = (rows as f64 * target as f64 / nodes as f64).round() as usize;
            }
            let mut run = SizeRun { target, nodes, rows, ..SizeRun::default() };
            for _ in 0..rounds {
                let (answer, took) = chrome_tree(&session).await?;
                run.chrome.push(took);
                let t = Instant::now();
                let tree = read(&answer)?;
                run.parse.push(t.elapsed());
                let t = Instant::now();
                let (text, _) = tree.render();
                run.render.push(t.elapsed());
                run.chars = text.chars().count();
                let t = Instant::now();
                observer.observe(&session).await?;
                run.observe.push(t.elapsed());
            }
            out.push(run);
        }
        Ok::<_, BrowserError>(())
    }
    .await;
    driver.checkin(session).await;
    tasks.shutdown(Duration::from_secs(5)).await;
    result.map(|()| out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_request_names_its_rows_within_the_bound() {
        assert_eq!(rows_asked("GET /?rows=120 HTTP/1.1"), Some(120));
        assert_eq!(rows_asked("GET /?rows=999999 HTTP/1.1"), None);
        assert_eq!(rows_asked("GET /favicon.ico HTTP/1.1"), None);
        assert_eq!(rows_asked("POST /?rows=1 HTTP/1.1"), None);
    }

    #[test]
    fn the_page_has_a_row_of_link_text_and_button_per_row() {
        let p = page(3);
        assert_eq!(p.matches("<tr>").count(), 4, "a header row and three rows");
        assert!(p.contains("<a href=\"#r2\">Item 2</a>") && p.contains("<button>Edit 2</button>"));
    }
}
