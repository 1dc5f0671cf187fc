//! `skillshift local`: the embedded default. A coordinator with its store in
//! a local folder, N workers in this process (each with its own fixture sites
//! and its own Chromium), the full 18-cell grid with the `skills` agent and
//! the example skill library; shows progress, writes per_task.jsonl,
//! contract.json and summary.json under --out, and prints the Table 1 shape.
//! The parts talk over real gRPC on loopback, as in a cluster.

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{bail, Context};
use skillshift_common::report::{self, document};
use skillshift_coordinator::server::{self, Config};
use skillshift_experiment::embedded::{generated_tasks, Embedded};
use skillshift_worker::browser::BrowserConfig;
use skillshift_worker::executor::Executor;
use skillshift_worker::remote::{self, simulate::SimulatedExecutor, RemoteConfig};
use skillshift_worker::run_executor::BrowserExecutor;
use skillshift_worker::runloop::{RunContext, TaskSource};
use skillshift_worker::sites::{ResetPolicy, SiteManager};
use tokio_util::sync::CancellationToken;

use super::sweep::{self as sweep_cmd, Connection, StartArgs};

#[derive(clap::Args)]
pub struct Args {
    /// Workers, each with its own browser and fixture sites.
    #[arg(long, default_value_t = 2, value_parser = clap::value_parser!(u32).range(1..=64))]
    pub workers: u32,
    /// skills, reference (needs OPENAI_API_KEY or OPENAI_BASE_URL) or cmd:<command line>.
    #[arg(long, default_value = "skills")]
    pub agent: String,
    #[arg(long)]
    pub model: Option<String>,
    /// Repetitions of every unit.
    #[arg(long, default_value_t = 1)]
    pub count: u32,
    /// Output folder (records, contract, summary and the store).
    #[arg(long, default_value = "skillshift-local")]
    pub out: PathBuf,
    #[arg(long, default_value_t = 10)]
    pub max_steps: u32,
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// JSON shaped like data/calibration_set.json: run only these families.
    #[arg(long)]
    pub families: Option<PathBuf>,
    /// Skill library; `none` for no skills. Default data/skills/example.json.
    #[arg(long)]
    pub skills: Option<String>,
    #[arg(long, default_value = "data")]
    pub data: PathBuf,
    /// Testing aid: workers run no browser, attempts take about MS ms with fake records.
    #[arg(long, hide = true, value_name = "MS")]
    pub simulate: Option<u64>,
    #[command(flatten)]
    pub telemetry: skillshift_telemetry::TelemetryArgs,
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let mut telemetry = args.telemetry.config("skillshift-local")?;
    // One line per attempt would bury the progress bars; RUST_LOG still overrides.
    telemetry.default_log_filter = "warn".into();
    if args.agent == "reference"
        && std::env::var_os("OPENAI_API_KEY").is_none()
        && std::env::var_os("OPENAI_BASE_URL").is_none()
    {
        bail!("--agent reference needs OPENAI_API_KEY or OPENAI_BASE_URL");
    }
    let start = StartArgs {
        sites: skillshift_common::Site::ALL.to_vec(),
        conditions: skillshift_common::Condition::ALL.to_vec(),
        families: args.families.clone(),
        treatment: None,
        skills: args.skills.clone(),
        agent: args.agent.clone(),
        model: args.model.clone(),
        provider: None,
        temperature: None,
        count: args.count,
        max_steps: args.max_steps,
        task_timeout: 600,
        max_retries: 2,
        seed: args.seed,
        cost_budget: None,
        profile: None,
        data: args.data.clone(),
    };
    let spec = sweep_cmd::build_spec(&start)?;
    std::fs::create_dir_all(&args.out).with_context(|| format!("creating {}", args.out.display()))?;
    let rt = tokio::runtime::Runtime::new().context("starting the async runtime")?;
    let began = Instant::now();
    let code = rt.block_on(async {
        // Logs to stderr; the coordinator's and the workers' spans over OTLP when an endpoint is configured.
        let traces = skillshift_telemetry::init(&telemetry)?;
        let cancel = sweep_cmd::cancel_on_signals();
        let token = format!("{:032x}", rand_token());
        let coordinator = server::start(
            Config {
                listen: "127.0.0.1:0".parse().context("loopback address")?,
                http: None,
                data_dir: args.out.join("coordinator"),
                token: Some(token.clone()),
                tls: None,
                lease_ttl: Duration::from_secs(30),
            },
            cancel.child_token(),
        )
        .await?;
        let url = format!("http://{}", coordinator.grpc_addr);
        let workers_stop = CancellationToken::new();
        let mut workers = Vec::new();
        let mut browsers = Vec::new();
        for i in 0..args.workers {
            let name = format!("local-{i}");
            let executor: Arc<dyn Executor> = match args.simulate {
                Some(ms) => Arc::new(SimulatedExecutor::new(Duration::from_millis(ms), 1)),
                None => {
                    let sites: Arc<dyn SiteManager> = Arc::new(Embedded::start(ResetPolicy::BeforeEach).await?);
                    let probe = skillshift_common::task::task_file_path(
                        &args.data,
                        skillshift_common::Site::Gitlab,
                        skillshift_common::Version::V1,
                    );
                    let tasks = if probe.exists() { TaskSource::Dir(args.data.clone()) } else { generated_tasks() };
                    let ex = Arc::new(BrowserExecutor::new(
                        RunContext::new(sites, tasks, name.clone()),
                        BrowserConfig::default(),
                        1,
                    ));
                    browsers.push(ex.clone());
                    ex
                }
            };
            let mut cfg = RemoteConfig::new(&url, &name, args.out.join("outbox").join(&name));
            cfg.token = Some(token.clone());
            workers.push(tokio::spawn(remote::run(cfg, executor, workers_stop.clone())));
        }
        let conn = Connection::plain(url.clone(), Some(token.clone()));
        let mut client = conn.client().await?;
        let id = client.submit(&spec).await?;
        eprintln!("sweep {id}: {} units on {} workers", spec_units(&spec), args.workers);
        let watched = tokio::select! {
            r = sweep_cmd::watch(&conn, &id) => Some(r?),
            _ = cancel.cancelled() => None,
        };
        let out_file = args.out.join("per_task.jsonl");
        let n = sweep_cmd::export(&mut client, &id, &out_file).await?;
        workers_stop.cancel();
        for w in workers {
            match w.await {
                Ok(Ok(_)) => {}
                Ok(Err(e)) => eprintln!("skillshift: worker: {e}"),
                Err(e) => eprintln!("skillshift: worker task: {e}"),
            }
        }
        for b in browsers {
            b.shutdown().await;
        }
        cancel.cancel();
        coordinator.wait().await?;
        if let Err(e) = traces.shutdown(Duration::from_secs(5)).await {
            eprintln!("skillshift: warning: {e}");
        }
        eprintln!("wrote {n} records to {}", out_file.display());
        Ok::<_, anyhow::Error>(watched.unwrap_or(ExitCode::from(1)))
    })?;
    let out_file = args.out.join("per_task.jsonl");
    let r = report::build(&out_file, None, false)?;
    let summary_path = args.out.join("summary.json");
    std::fs::write(&summary_path, serde_json::to_string_pretty(&r.summary)? + "\n")
        .with_context(|| format!("writing {}", summary_path.display()))?;
    print!("{}", report::text::render(&document(&r)));
    for note in &r.notes {
        eprintln!("skillshift: note: {note}");
    }
    if args.simulate.is_some() {
        eprintln!("note: --simulate ran no browser; these numbers are fake and measure nothing");
    } else {
        println!(
            "note: these numbers come from skillshift's bundled fixture sites (small stand-ins for GitLab, Magento and \
             WordPress) and exercise the harness; they are not the benchmark's numbers and must not be reported as such"
        );
    }
    eprintln!(
        "done in {:.1} s; records {}, summary {}",
        began.elapsed().as_secs_f64(),
        out_file.display(),
        summary_path.display()
    );
    Ok(code)
}

fn spec_units(spec: &skillshift_coordinator::planner::SweepSpec) -> usize {
    skillshift_coordinator::planner::plan(spec).map(|u| u.len()).unwrap_or(0)
}

fn rand_token() -> u128 {
    use std::hash::{BuildHasher, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u128(std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos()));
    let a = h.finish() as u128;
    let mut h2 = std::collections::hash_map::RandomState::new().build_hasher();
    h2.write_u64(std::process::id() as u64);
    a << 64 | h2.finish() as u128
}
