//! `skillshift local`'s in-process cluster: a coordinator with its store under
//! the output folder, N workers (each with its own fixture sites and
//! Chromium, or simulated), talking over real gRPC on loopback as in a
//! cluster; the sweep is submitted, followed, exported, and summarised.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use anyhow::Context;
use skillshift_analysis::report::{self, Report};
use skillshift_coordinator::server::{self, Config};
use skillshift_taskcenter::TaskCenter;
use skillshift_telemetry::TelemetryConfig;
use skillshift_worker::remote::{self, RemoteConfig};
use skillshift_worker::sites::ResetPolicy;

use crate::settings::{Connect, SweepSettings};
use crate::workers::{self, Runs, SiteChoice, WorkerPlan};

/// How long a `local` worker keeps offering what it holds once the sweep is over: trajectories
/// follow their records, and on a loaded machine a worker's last ones take longer than the 10 s
/// a remote worker allows.
const LOCAL_DELIVER_TIMEOUT: Duration = Duration::from_secs(90);

/// What `local` runs.
#[derive(Debug, Clone)]
pub struct LocalSettings {
    pub sweep: SweepSettings,
    pub workers: u32,
    /// Attempts each worker runs at once.
    pub slots: u32,
    /// Output folder: records, contract, summary and the coordinator's store.
    pub out: PathBuf,
    /// Testing aid: workers run no browser; attempts take about this long with made-up records.
    pub simulate: Option<Duration>,
    /// `--real-sites FILE`: the site-versions it names run on those instances, shared by every worker.
    pub real_sites: Option<PathBuf>,
    /// The in-process coordinator's LLM budget (`--llm-concurrency`, `--llm-rpm`, `--llm-tpm`).
    pub llm_budget: skillshift_coordinator::llm_budget::BudgetConfig,
    pub telemetry: TelemetryConfig,
    /// Which steps of each trajectory keep a screenshot.
    pub screenshots: skillshift_common::trajectory::ScreenshotPolicy,
}

/// How a local run ended.
pub struct LocalRun {
    /// `false` when the sweep was cancelled (Ctrl-C or a stop of its own).
    pub completed: bool,
    /// The sweep's last status as one line (`sweep status`'s), when it was followed to its end; the caller
    /// prints it, as the library writes nothing on stdout.
    pub status: Option<String>,
    pub records: PathBuf,
    /// One per treatment, in the order the records name them.
    pub reports: Vec<TreatmentReport>,
    pub elapsed: Duration,
    /// Why attempts errored, the most frequent first.
    pub errors: crate::errors::ErrorSummary,
    /// The images that ran on real instances (`--real-sites`), e.g. `wordpress-v1`.
    pub real: Vec<String>,
}

/// One treatment's report and the summary file written for it.
pub struct TreatmentReport {
    pub treatment: String,
    pub report: Report,
    /// `summary.json`, or `summary.<treatment>.json` when the run has several treatments.
    pub summary: PathBuf,
}

/// A treatment name as a file name part: anything but letters, digits, `-`, `_` and `.` becomes `_`.
fn file_part(name: &str) -> String {
    name.chars().map(|c| if c.is_ascii_alphanumeric() || "-_.".contains(c) { c } else { '_' }).collect()
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

/// Runs the sweep on an in-process cluster, writes `per_task.jsonl`, `contract.json` and a summary per
/// treatment under `out`, and returns the reports.
pub fn run(s: LocalSettings) -> anyhow::Result<LocalRun> {
    if s.real_sites.is_some() && s.simulate.is_some() {
        anyhow::bail!("--real-sites runs real instances in a browser; it cannot be combined with --simulate");
    }
    let real = s.real_sites.as_deref().map(|p| crate::real::RealSites::load(p, None)).transpose()?;
    let mut planned = crate::spec::build(&s.sweep)?;
    // Reports (and the `compare` lines) follow the treatments as given, the baseline first, whichever
    // came from a reused file.
    let order: Vec<String> = planned.treatments.iter().map(|t| t.name.clone()).collect();
    if let Some(r) = &real {
        // The frozen contract names what the attempts ran on: the real instances' digests.
        planned.image_digests.extend(r.digests());
        r.task_digests(&s.sweep.data, &mut planned.task_file_digests)?;
    }
    let baseline = s.sweep.reuse_baseline.as_deref().map(|p| crate::reuse::for_spec(p, &planned)).transpose()?;
    let spec = match &baseline {
        Some(b) => {
            eprintln!("{}", b.describe());
            b.remaining(&planned)?
        }
        None => planned,
    };
    let rt = tokio::runtime::Runtime::new().context("starting the async runtime")?;
    if s.simulate.is_none() {
        // Before anything is stored: without a browser every attempt would error in a second.
        rt.block_on(crate::workers::preflight())?;
    }
    if let Some(r) = &real {
        rt.block_on(r.check())?;
    }
    std::fs::create_dir_all(&s.out).with_context(|| format!("creating {}", s.out.display()))?;
    let records = s.out.join("per_task.jsonl");
    let began = Instant::now();
    let completed = rt.block_on(async {
        // Logs to stderr; the coordinator's and the workers' spans over OTLP when an endpoint is configured.
        let traces = skillshift_telemetry::init(&s.telemetry)?;
        let cancel = crate::signals::cancel_on_signals();
        // Not the signal's: on Ctrl-C the coordinator stays up until the workers have drained and the
        // records are exported.
        let stop_coordinator = tokio_util::sync::CancellationToken::new();
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
                llm_budget: s.llm_budget,
            },
            stop_coordinator.clone(),
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
                    None => Runs::Browser(match &real {
                        Some(r) => SiteChoice::Mixed(ResetPolicy::BeforeEach, r.clone()),
                        None => SiteChoice::Embedded(ResetPolicy::BeforeEach),
                    }),
                },
                slots: s.slots.max(1),
                browser_reuse: skillshift_worker::browser::BrowserConfig::default().reuse,
                data: s.sweep.data.clone(),
                screenshots: s.screenshots,
            };
            let outbox = s.out.join("outbox").join(&name);
            let mut cfg = RemoteConfig::new(&url, &name, outbox.clone());
            cfg.token = Some(token.clone());
            // The LLM calls of this worker's attempts ask the coordinator for permits.
            let worker = workers::build(&plan, Some(remote::permit_gate(&cfg)?)).await?;
            // The coordinator is in this process: what is left after the sweep is trajectories
            // on their way, and the export must wait for them (the drain below allows 120 s).
            cfg.deliver_timeout = LOCAL_DELIVER_TIMEOUT;
            let executor = worker.executor.clone();
            tasks.spawn("worker", move |stop| async move {
                match remote::run(cfg, executor, stop).await {
                    Err(e) => eprintln!("skillshift: worker: {e}"),
                    Ok(s) if s.undelivered > 0 || s.undelivered_trajectories > 0 => eprintln!(
                        "skillshift: warning: worker {name} stopped with {} records and {} trajectories not delivered; \
                         they stay in {} and the export lacks them",
                        s.undelivered,
                        s.undelivered_trajectories,
                        outbox.display()
                    ),
                    Ok(_) => {}
                }
            });
            built.push(worker);
        }
        let swept = async {
            let conn = Connect::plain(url.clone(), Some(token.clone()));
            let mut client = conn.client().await?;
            let id = client.submit(&spec).await?;
            eprintln!("sweep {id}: {} units on {} workers", crate::spec::units(&spec), s.workers);
            let followed = tokio::select! {
                r = crate::follow::follow(&conn, &id, crate::progress::interactive()) => Some(r?),
                _ = cancel.cancelled() => None,
            };
            // Workers drain first: their trajectories follow the records, and the export should hold them.
            if !tasks.shutdown(Duration::from_secs(120)).await {
                eprintln!("skillshift: warning: a worker did not stop in time");
            }
            let mut n = crate::export::export(&mut client, &id, &records).await?;
            if let Some(b) = &baseline {
                n += crate::reuse::merge(&records, b)?;
            }
            Ok::<_, anyhow::Error>((n, followed))
        }
        .await;
        // On every path, also a failed one: no chromedriver or Chromium outlives `local`.
        tasks.shutdown(Duration::from_secs(5)).await;
        for w in &built {
            w.shutdown().await;
        }
        stop_coordinator.cancel();
        coordinator.wait().await?;
        let (n, followed) = swept?;
        if let Err(e) = traces.shutdown(Duration::from_secs(5)).await {
            eprintln!("skillshift: warning: {e}");
        }
        eprintln!("wrote {n} records to {}", records.display());
        let status = followed.as_ref().map(crate::follow::one_line);
        Ok::<_, anyhow::Error>((followed.is_some_and(|st| crate::follow::finished_ok(st.state)), status))
    });
    // A store write stuck on a failed disk must not hold the exit (dropping the runtime would wait for it).
    rt.shutdown_timeout(Duration::from_secs(5));
    let (completed, status) = completed?;
    let set = skillshift_analysis::records::read_file(&records)?;
    let mut names: Vec<String> = set.names().into_iter().map(String::from).collect();
    names.sort_by_key(|n| order.iter().position(|o| o == n).unwrap_or(order.len()));
    let mut reports = Vec::new();
    // A sweep over part of the grid reports the part it ran, as it asked to.
    let partial = s.sweep.families.is_some()
        || s.sweep.sites.len() < skillshift_common::Site::ALL.len()
        || s.sweep.conditions.len() < skillshift_common::Condition::ALL.len();
    for name in &names {
        let report = report::build(&records, Some(name), partial)?;
        let summary = match names.len() {
            1 => s.out.join("summary.json"),
            _ => s.out.join(format!("summary.{}.json", file_part(name))),
        };
        std::fs::write(&summary, serde_json::to_string_pretty(&report.summary)? + "\n")
            .with_context(|| format!("writing {}", summary.display()))?;
        reports.push(TreatmentReport { treatment: name.clone(), report, summary });
    }
    let errors = crate::errors::ErrorSummary::read(&records)?;
    let real = real.map(|r| r.images(&s.sweep.sites)).unwrap_or_default();
    Ok(LocalRun { completed, status, records, reports, elapsed: began.elapsed(), errors, real })
}
