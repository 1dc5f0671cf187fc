//! `skillshift local`'s in-process cluster: a coordinator with its store under
//! the output folder, N workers (each with its own fixture sites and
//! Chromium, or simulated), talking over real gRPC on loopback as in a
//! cluster; the sweep is submitted, followed, exported, and summarised.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use anyhow::Context;
use skillshift_analysis::report::{self, Report};
use skillshift_coordinator::server::{self, Config};
use skillshift_tasks::TaskCenter;
use skillshift_telemetry::TelemetryConfig;
use skillshift_worker::remote::{self, RemoteConfig};
use skillshift_worker::sites::ResetPolicy;

use crate::settings::{Connect, SweepSettings};
use crate::workers::{self, Runs, SiteChoice, WorkerPlan};

/// What `local` runs.
#[derive(Debug, Clone)]
pub struct LocalSettings {
    pub sweep: SweepSettings,
    pub workers: u32,
    /// Output folder: records, contract, summary and the coordinator's store.
    pub out: PathBuf,
    /// Testing aid: workers run no browser; attempts take about this long with made-up records.
    pub simulate: Option<Duration>,
    pub telemetry: TelemetryConfig,
    /// Which steps of each trajectory keep a screenshot.
    pub screenshots: skillshift_common::trajectory::ScreenshotPolicy,
}

/// How a local run ended.
pub struct LocalRun {
    /// `false` when the sweep was cancelled (Ctrl-C or a stop of its own).
    pub completed: bool,
    pub records: PathBuf,
    pub summary: PathBuf,
    pub report: Report,
    pub elapsed: Duration,
}

/// A random token for the in-process coordinator, so nothing else on the machine can use it.
fn random_token() -> String {
    use std::hash::{BuildHasher, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u128(std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos()));
    let a = h.finish() as u128;
    let mut h2 = std::collections::hash_map::RandomState::new().build_hasher();
    h2.write_u64(std::process::id() as u64);
    format!("{:032x}", a << 64 | h2.finish() as u128)
}

/// Runs the sweep on an in-process cluster, writes `per_task.jsonl`, `contract.json` and
/// `summary.json` under `out`, and returns the report.
pub fn run(s: LocalSettings) -> anyhow::Result<LocalRun> {
    let spec = crate::spec::build(&s.sweep)?;
    std::fs::create_dir_all(&s.out).with_context(|| format!("creating {}", s.out.display()))?;
    let records = s.out.join("per_task.jsonl");
    let rt = tokio::runtime::Runtime::new().context("starting the async runtime")?;
    let began = Instant::now();
    let completed = rt.block_on(async {
        // Logs to stderr; the coordinator's and the workers' spans over OTLP when an endpoint is configured.
        let traces = skillshift_telemetry::init(&s.telemetry)?;
        let cancel = crate::signals::cancel_on_signals();
        let token = random_token();
        let coordinator = server::start(
            Config {
                listen: "127.0.0.1:0".parse().context("loopback address")?,
                http: None,
                data_dir: s.out.join("coordinator"),
                token: Some(token.clone()),
                tls: None,
                lease_ttl: Duration::from_secs(30),
                limits: Default::default(),
            },
            cancel.child_token(),
        )
        .await?;
        let url = format!("http://{}", coordinator.grpc_addr);
        let tasks = TaskCenter::new("local-workers");
        let mut built = Vec::new();
        for i in 0..s.workers {
            let name = format!("local-{i}");
            let plan = WorkerPlan {
                name: name.clone(),
                runs: match s.simulate {
                    Some(ms) => Runs::Simulated(ms),
                    None => Runs::Browser(SiteChoice::Embedded(ResetPolicy::BeforeEach)),
                },
                slots: 1,
                browser_reuse: skillshift_worker::browser::BrowserConfig::default().reuse,
                data: s.sweep.data.clone(),
                screenshots: s.screenshots,
            };
            let worker = workers::build(&plan).await?;
            let mut cfg = RemoteConfig::new(&url, &name, s.out.join("outbox").join(&name));
            cfg.token = Some(token.clone());
            let executor = worker.executor.clone();
            tasks.spawn("worker", move |stop| async move {
                if let Err(e) = remote::run(cfg, executor, stop).await {
                    eprintln!("skillshift: worker: {e}");
                }
            });
            built.push(worker);
        }
        let conn = Connect::plain(url.clone(), Some(token.clone()));
        let mut client = conn.client().await?;
        let id = client.submit(&spec).await?;
        eprintln!("sweep {id}: {} units on {} workers", crate::spec::units(&spec), s.workers);
        let followed = tokio::select! {
            r = crate::follow::follow(&conn, &id, crate::progress::interactive()) => Some(r?),
            _ = cancel.cancelled() => None,
        };
        if let Some(st) = &followed {
            println!("{}", crate::follow::one_line(st));
        }
        // Workers drain first: their trajectories follow the records, and the export should hold them.
        if !tasks.shutdown(Duration::from_secs(120)).await {
            eprintln!("skillshift: warning: a worker did not stop in time");
        }
        let n = crate::export::export(&mut client, &id, &records).await?;
        for w in &built {
            w.shutdown().await;
        }
        cancel.cancel();
        coordinator.wait().await?;
        if let Err(e) = traces.shutdown(Duration::from_secs(5)).await {
            eprintln!("skillshift: warning: {e}");
        }
        eprintln!("wrote {n} records to {}", records.display());
        Ok::<_, anyhow::Error>(followed.is_some_and(|st| crate::follow::finished_ok(st.state)))
    })?;
    let report = report::build(&records, None, false)?;
    let summary = s.out.join("summary.json");
    std::fs::write(&summary, serde_json::to_string_pretty(&report.summary)? + "\n")
        .with_context(|| format!("writing {}", summary.display()))?;
    Ok(LocalRun { completed, records, summary, report, elapsed: began.elapsed() })
}
