//! `skillshift sweep start|status|watch|list|cancel|resume|export`: sweeps on
//! a running coordinator (formats §11), plus the connection flags and the
//! process plumbing (logs, signals) shared by the distributed commands.

use std::collections::BTreeMap;
use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use anyhow::{bail, Context};
use futures::StreamExt;
use skillshift_common::skills::{SkillLibrary, SKILLS_SCHEMA};
use skillshift_common::{Condition, Site, Version};
use skillshift_coordinator::client::{Client, ExportItem};
use skillshift_coordinator::planner::{digest_json, SweepSpec, TreatmentSpec};
use skillshift_coordinator::status::{SweepState, SweepStatus};
use skillshift_proto::channel::ClientTls;
use tokio_util::sync::CancellationToken;

/// How to reach the coordinator; shared by every distributed command.
#[derive(clap::Args, Clone, Debug)]
pub struct Connection {
    /// Coordinator URL.
    #[arg(long, global = true, env = "SKILLSHIFT_COORDINATOR", default_value = "http://127.0.0.1:50051")]
    pub coordinator: String,
    /// Shared token, sent as `authorization: Bearer <token>`.
    #[arg(long, global = true, env = "SKILLSHIFT_TOKEN", hide_env_values = true)]
    pub token: Option<String>,
    /// PEM CA certificate to verify the coordinator's TLS certificate (implies TLS).
    #[arg(long, global = true)]
    pub ca: Option<PathBuf>,
    /// PEM client certificate, for a coordinator that requires mutual TLS (with --tls-key).
    #[arg(long, global = true, requires = "tls_key")]
    pub tls_cert: Option<PathBuf>,
    /// PEM private key of --tls-cert.
    #[arg(long, global = true, requires = "tls_cert")]
    pub tls_key: Option<PathBuf>,
}

impl Connection {
    /// A connection to a coordinator on loopback with a token and no TLS (`skillshift local`).
    pub fn plain(coordinator: String, token: Option<String>) -> Connection {
        Connection { coordinator, token, ca: None, tls_cert: None, tls_key: None }
    }

    pub fn tls(&self) -> ClientTls {
        ClientTls { ca: self.ca.clone(), identity: self.tls_cert.clone().zip(self.tls_key.clone()) }
    }

    pub async fn client(&self) -> anyhow::Result<Client> {
        let token = self.token.as_deref().filter(|t| !t.is_empty());
        Ok(Client::connect(&self.coordinator, token, &self.tls()).await?)
    }
}

/// A root token cancelled by the first Ctrl-C or SIGTERM; a second one exits at once.
pub fn cancel_on_signals() -> CancellationToken {
    let cancel = CancellationToken::new();
    let c = cancel.clone();
    tokio::spawn(async move {
        let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()).ok();
        for round in 0..2 {
            let sigterm = async {
                match term.as_mut() {
                    Some(t) => {
                        t.recv().await;
                    }
                    None => std::future::pending::<()>().await,
                }
            };
            tokio::select! {
                _ = tokio::signal::ctrl_c() => {}
                _ = sigterm => {}
            }
            if round == 0 {
                eprintln!("shutting down (again to exit at once)");
                c.cancel();
            } else {
                std::process::exit(130);
            }
        }
    });
    cancel
}

#[derive(clap::Args)]
pub struct Args {
    #[command(flatten)]
    pub conn: Connection,
    #[command(subcommand)]
    pub command: Command,
}

// Parsed once per process; boxing the large variant would buy nothing.
#[allow(clippy::large_enum_variant)]
#[derive(clap::Subcommand)]
pub enum Command {
    /// Submit a sweep; prints its id alone.
    Start(StartArgs),
    /// One status snapshot.
    Status {
        id: String,
        /// {"id","state","units":{...},"attempts":{...}}
        #[arg(long)]
        json: bool,
    },
    /// Live progress of the 18 cells until done (exit 0) or cancelled (exit 1).
    Watch { id: String },
    /// Every sweep the coordinator knows.
    List,
    /// Stop assigning a sweep's units and cancel its running attempts.
    Cancel { id: String },
    /// Resume a cancelled sweep.
    Resume { id: String },
    /// Write per_task.jsonl (every attempt) and contract.json beside it.
    Export {
        id: String,
        #[arg(long, default_value = "per_task.jsonl")]
        out: PathBuf,
    },
}

#[derive(clap::Args)]
pub struct StartArgs {
    /// Comma-separated sites.
    #[arg(long, value_delimiter = ',', default_value = "gitlab,magento,wordpress")]
    pub sites: Vec<Site>,
    /// Comma-separated conditions.
    #[arg(long, value_delimiter = ',', default_value = "src,src-perc,src-exec,tgt,tgt-perc,tgt-exec")]
    pub conditions: Vec<Condition>,
    /// JSON shaped like data/calibration_set.json: limits each listed site to its families.
    #[arg(long)]
    pub families: Option<PathBuf>,
    /// Method label (default: the skill library's `method`, or CONTROL without skills).
    #[arg(long)]
    pub treatment: Option<String>,
    /// Skill library (formats §9); `none` for a treatment without skills. Default data/skills/example.json.
    #[arg(long)]
    pub skills: Option<String>,
    #[arg(long, default_value = "skills")]
    pub agent: String,
    #[arg(long)]
    pub model: Option<String>,
    #[arg(long)]
    pub provider: Option<String>,
    #[arg(long)]
    pub temperature: Option<f64>,
    #[arg(long, default_value_t = 1)]
    pub count: u32,
    #[arg(long, default_value_t = 10)]
    pub max_steps: u32,
    /// Wall-clock ceiling of one attempt, in seconds.
    #[arg(long, default_value_t = 600)]
    pub task_timeout: u64,
    #[arg(long, default_value_t = 2)]
    pub max_retries: u32,
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Stop when the sweep's LLM cost reaches this many USD.
    #[arg(long)]
    pub cost_budget: Option<f64>,
    /// Perturbation profile (default data/perturbations/default.json when present).
    #[arg(long)]
    pub profile: Option<PathBuf>,
    /// Data directory (tasks/, skills/, DIGESTS.json).
    #[arg(long, default_value = "data")]
    pub data: PathBuf,
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let rt = tokio::runtime::Runtime::new().context("starting the async runtime")?;
    rt.block_on(async move {
        match args.command {
            Command::Start(s) => {
                let spec = build_spec(&s)?;
                let id = args.conn.client().await?.submit(&spec).await?;
                println!("{id}");
                Ok(ExitCode::SUCCESS)
            }
            Command::Status { id, json } => {
                let st = args.conn.client().await?.get(&id).await?;
                if json {
                    println!("{}", st.to_json());
                } else {
                    println!("{}", one_line(&st));
                }
                Ok(ExitCode::SUCCESS)
            }
            Command::Watch { id } => watch(&args.conn, &id).await,
            Command::List => {
                for st in args.conn.client().await?.list().await? {
                    println!("{}", one_line(&st));
                }
                Ok(ExitCode::SUCCESS)
            }
            Command::Cancel { id } => {
                println!("{}", one_line(&args.conn.client().await?.cancel(&id).await?));
                Ok(ExitCode::SUCCESS)
            }
            Command::Resume { id } => {
                let st = args.conn.client().await?.resume(&id).await?;
                if let (SweepState::Cancelled, Some(reason)) = (st.state, &st.stopped) {
                    bail!("sweep {id} cannot resume: {reason}");
                }
                println!("{}", one_line(&st));
                Ok(ExitCode::SUCCESS)
            }
            Command::Export { id, out } => {
                let mut client = args.conn.client().await?;
                let n = export(&mut client, &id, &out).await?;
                eprintln!("wrote {n} records to {} and {}", out.display(), contract_path(&out).display());
                Ok(ExitCode::SUCCESS)
            }
        }
    })
}

/// `sw-… running  12/36 done, 3 running, 21 queued, 0 invalid; 15 attempts (0 error)`, then the
/// LLM cost when there is one and why the sweep stopped when it stopped on its own.
pub fn one_line(st: &SweepStatus) -> String {
    let mut line = format!(
        "{}  {:<9}  {}/{} done, {} running, {} queued, {} invalid; {} attempts ({} error)",
        st.id,
        st.state.as_str(),
        st.units.done + st.units.invalid,
        st.units.total,
        st.units.running,
        st.units.queued,
        st.units.invalid,
        st.attempts.total,
        st.attempts.error
    );
    if st.cost_usd > 0.0 {
        line.push_str(&format!("; ${:.2} spent", st.cost_usd));
    }
    if let Some(reason) = &st.stopped {
        line.push_str(&format!("; stopped: {reason}"));
    }
    line
}

fn contract_path(out: &Path) -> PathBuf {
    out.parent().map(|p| p.join("contract.json")).unwrap_or_else(|| PathBuf::from("contract.json"))
}

/// Streams a sweep's records into `out` (atomically) and its contract beside it.
pub async fn export(client: &mut Client, id: &str, out: &Path) -> anyhow::Result<usize> {
    if let Some(dir) = out.parent().filter(|p| !p.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    }
    let tmp = out.with_extension("jsonl.partial");
    let file = std::fs::File::create(&tmp).with_context(|| format!("writing {}", tmp.display()))?;
    let mut w = std::io::BufWriter::new(file);
    let mut stream = client.export(id).await?;
    let mut contract = None;
    let mut n = 0;
    while let Some(item) = stream.next().await {
        match item? {
            ExportItem::Contract(c) => contract = Some(c),
            ExportItem::Record(r) => {
                serde_json::to_writer(&mut w, &r)?;
                w.write_all(b"\n")?;
                n += 1;
            }
        }
    }
    w.flush()?;
    drop(w);
    let contract = contract.context("the coordinator sent no contract")?;
    std::fs::rename(&tmp, out).with_context(|| format!("writing {}", out.display()))?;
    let cpath = contract_path(out);
    std::fs::write(&cpath, serde_json::to_string_pretty(&contract)? + "\n")
        .with_context(|| format!("writing {}", cpath.display()))?;
    Ok(n)
}

fn sha256_file(path: &Path) -> anyhow::Result<String> {
    let bytes = std::fs::read(path).with_context(|| format!("reading {}", path.display()))?;
    let v: serde_json::Value =
        serde_json::from_slice(&bytes).with_context(|| format!("{}: not JSON", path.display()))?;
    Ok(digest_json(&v))
}

/// The example library: data/skills/example.json, else the fixture sites' own.
pub fn example_library(data: &Path) -> anyhow::Result<SkillLibrary> {
    let path = data.join("skills").join("example.json");
    if path.exists() {
        return Ok(SkillLibrary::load(&path)?);
    }
    Ok(SkillLibrary {
        schema: SKILLS_SCHEMA.into(),
        method: "example".into(),
        skills: Site::ALL.iter().flat_map(|s| skillshift_sites::skills(*s)).collect(),
    })
}

/// Reads a `--families` file shaped like data/calibration_set.json.
pub fn read_families(path: &Path) -> anyhow::Result<BTreeMap<Site, Vec<u32>>> {
    let text = std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    let v: serde_json::Value = serde_json::from_str(&text).with_context(|| format!("{}: not JSON", path.display()))?;
    let Some(sites) = v.get("sites").and_then(|s| s.as_object()) else {
        bail!("{}: expected an object with \"sites\": {{\"<site>\": {{\"families\": [...]}}}}", path.display());
    };
    let mut out = BTreeMap::new();
    for (name, entry) in sites {
        let site: Site = name.parse().with_context(|| format!("{}: sites", path.display()))?;
        let Some(ids) = entry.get("families").and_then(|f| f.as_array()) else {
            bail!("{}: sites.{name}.families is missing or not an array", path.display());
        };
        let ids = ids
            .iter()
            .map(|x| x.as_u64().and_then(|n| u32::try_from(n).ok()))
            .collect::<Option<Vec<u32>>>()
            .with_context(|| {
                format!("{}: sites.{name}.families holds a value that is not a task id", path.display())
            })?;
        out.insert(site, ids);
    }
    Ok(out)
}

pub fn build_spec(s: &StartArgs) -> anyhow::Result<SweepSpec> {
    let library = match s.skills.as_deref() {
        Some("none") => None,
        Some(path) => Some(SkillLibrary::load(Path::new(path))?),
        None => Some(example_library(&s.data)?),
    };
    let name = s.treatment.clone().unwrap_or_else(|| match &library {
        Some(l) => l.method.clone(),
        None => "CONTROL".into(),
    });
    let mut spec = SweepSpec::full_grid(TreatmentSpec { name, skills: library });
    spec.agent = s.agent.clone();
    spec.model = s.model.clone();
    spec.provider = s.provider.clone();
    spec.temperature = s.temperature;
    spec.sites = s.sites.clone();
    spec.conditions = s.conditions.clone();
    if let Some(f) = &s.families {
        let mut families = read_families(f)?;
        families.retain(|site, _| s.sites.contains(site));
        spec.families = families;
    }
    spec.count = s.count;
    spec.max_steps = s.max_steps;
    spec.task_timeout_s = s.task_timeout;
    spec.max_retries = s.max_retries;
    spec.seed = s.seed;
    spec.cost_budget_usd = s.cost_budget;
    let profile = s.profile.clone().or_else(|| {
        let p = s.data.join("perturbations").join("default.json");
        p.exists().then_some(p)
    });
    if let Some(p) = profile {
        let text = std::fs::read_to_string(&p).with_context(|| format!("reading {}", p.display()))?;
        spec.perturbation_profile =
            Some(serde_json::from_str(&text).with_context(|| format!("{}: not JSON", p.display()))?);
    }
    for site in &spec.sites {
        for v in Version::ALL {
            let path = skillshift_common::task::task_file_path(&s.data, *site, *v);
            if path.exists() {
                spec.task_file_digests.insert(format!("{site}.{v}.json"), sha256_file(&path)?);
            }
        }
    }
    let digests = s.data.join("DIGESTS.json");
    if digests.exists() {
        let text = std::fs::read_to_string(&digests).with_context(|| format!("reading {}", digests.display()))?;
        let map: BTreeMap<String, serde_json::Value> =
            serde_json::from_str(&text).with_context(|| format!("{}: expected an object", digests.display()))?;
        spec.image_digests = map.into_iter().filter_map(|(k, v)| v.as_str().map(|s| (k, s.to_string()))).collect();
    }
    spec.validate()?;
    Ok(spec)
}

/// Whether progress bars should be drawn (stderr is a terminal).
pub fn interactive() -> bool {
    std::io::stderr().is_terminal()
}

/// Exit code of a finished watch: 0 done, 1 cancelled.
pub fn final_code(state: SweepState) -> ExitCode {
    if state == SweepState::Cancelled {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    }
}

/// Waits a little between reconnection attempts of a watch.
pub const WATCH_RETRY: Duration = Duration::from_millis(500);

/// Follows a sweep until it is done or cancelled (see [`follow`]), then
/// prints its final status line on stdout; 0 done, 1 cancelled.
pub async fn watch(conn: &Connection, id: &str) -> anyhow::Result<ExitCode> {
    let st = follow(conn, id).await?;
    println!("{}", one_line(&st));
    Ok(final_code(st.state))
}

/// Follows a sweep until it is done or cancelled, drawing the 18 cells on a
/// terminal, and returns its final status. A broken stream (coordinator
/// restart) is retried for two minutes.
pub async fn follow(conn: &Connection, id: &str) -> anyhow::Result<SweepStatus> {
    let bars = interactive().then(Bars::new);
    let mut last_ok = std::time::Instant::now();
    let mut last: Option<SweepStatus> = None;
    loop {
        let attempt = async {
            let mut client = conn.client().await?;
            let mut stream = client.watch(id).await?;
            while let Some(st) = stream.next().await {
                let st = st?;
                if let Some(b) = &bars {
                    let workers = client.workers().await.map(|w| w.iter().filter(|x| x.connected).count()).ok();
                    b.draw(&st, workers);
                }
                let state = st.state;
                last = Some(st);
                if state.is_final() {
                    return Ok::<bool, anyhow::Error>(true);
                }
            }
            Ok(false)
        }
        .await;
        match attempt {
            Ok(true) => break,
            Ok(false) => last_ok = std::time::Instant::now(),
            Err(e) => {
                let refused = e.to_string().contains("no sweep") || e.to_string().contains("refused");
                if refused || last_ok.elapsed() > Duration::from_secs(120) {
                    return Err(e);
                }
            }
        }
        tokio::time::sleep(WATCH_RETRY).await;
    }
    let st = last.context("the coordinator sent no status")?;
    if let Some(b) = bars {
        b.finish();
    }
    Ok(st)
}

/// The terminal view: a header (state, workers, ETA) and one bar per cell.
struct Bars {
    _multi: indicatif::MultiProgress,
    header: indicatif::ProgressBar,
    cells: BTreeMap<(Site, Condition), indicatif::ProgressBar>,
}

impl Bars {
    fn new() -> Bars {
        let multi = indicatif::MultiProgress::new();
        let header = multi.add(indicatif::ProgressBar::new_spinner());
        header.set_style(
            indicatif::ProgressStyle::with_template("{spinner} {msg}")
                .unwrap_or_else(|_| indicatif::ProgressStyle::default_spinner()),
        );
        header.enable_steady_tick(Duration::from_millis(200));
        let style = indicatif::ProgressStyle::with_template("  {prefix:<20} [{bar:30}] {pos:>4}/{len:<4} {msg}")
            .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar())
            .progress_chars("=> ");
        let mut cells = BTreeMap::new();
        for site in Site::ALL {
            for cond in Condition::ALL {
                let bar = multi.add(indicatif::ProgressBar::new(0));
                bar.set_style(style.clone());
                bar.set_prefix(format!("{site:<9} {cond}"));
                cells.insert((*site, *cond), bar);
            }
        }
        Bars { _multi: multi, header, cells }
    }

    fn draw(&self, st: &SweepStatus, workers: Option<usize>) {
        let eta = st.eta_ms.map(|ms| format!("ETA {}", fmt_duration(ms))).unwrap_or_else(|| "ETA -".into());
        let workers = workers.map(|w| w.to_string()).unwrap_or_else(|| "?".into());
        self.header.set_message(format!(
            "{}  {}  {}/{} units  {} running  {} invalid  workers {}  {}",
            st.id,
            st.state.as_str(),
            st.units.done + st.units.invalid,
            st.units.total,
            st.units.running,
            st.units.invalid,
            workers,
            eta
        ));
        for c in &st.cells {
            if let Some(bar) = self.cells.get(&(c.site, c.condition)) {
                bar.set_length(c.total);
                bar.set_position(c.done + c.invalid);
                bar.set_message(format!("{} ok, {} running, {} invalid", c.successes, c.running, c.invalid));
            }
        }
    }

    fn finish(self) {
        self.header.finish_and_clear();
        for bar in self.cells.values() {
            bar.abandon();
        }
    }
}

fn fmt_duration(ms: u64) -> String {
    let s = ms / 1000;
    if s >= 3600 {
        format!("{}h{:02}m", s / 3600, (s % 3600) / 60)
    } else if s >= 60 {
        format!("{}m{:02}s", s / 60, s % 60)
    } else {
        format!("{s}s")
    }
}
