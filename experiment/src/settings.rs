//! Validated settings of the experiment's commands, free of any CLI crate: the
//! binary parses flags into these, tests build them directly.

use std::path::PathBuf;

use anyhow::bail;
use skillshift_common::{Condition, Site};
use skillshift_coordinator::client::Client;
use skillshift_proto::channel::ClientTls;

/// How to reach the coordinator.
#[derive(Debug, Clone)]
pub struct Connect {
    pub coordinator: String,
    /// The shared token; `None` sends none.
    pub token: Option<String>,
    /// PEM CA certificate that verifies the coordinator (implies TLS).
    pub ca: Option<PathBuf>,
    /// PEM client certificate and key, for a coordinator that requires mutual TLS.
    pub identity: Option<(PathBuf, PathBuf)>,
}

impl Connect {
    /// A connection to a coordinator on loopback with a token and no TLS (`skillshift local`).
    pub fn plain(coordinator: String, token: Option<String>) -> Connect {
        Connect { coordinator, token, ca: None, identity: None }
    }

    pub fn tls(&self) -> ClientTls {
        ClientTls { ca: self.ca.clone(), identity: self.identity.clone() }
    }

    pub async fn client(&self) -> anyhow::Result<Client> {
        let token = self.token.as_deref().filter(|t| !t.is_empty());
        Ok(Client::connect(&self.coordinator, token, &self.tls()).await?)
    }
}

/// Where the treatment's skill library comes from.
#[derive(Debug, Clone, PartialEq)]
pub enum Skills {
    /// `data/skills/example.json`, or the fixture sites' own library when that file is absent.
    Example,
    /// No library (a `CONTROL`-like treatment).
    None,
    File(PathBuf),
}

impl Skills {
    /// `none`, a path, or nothing for the example library.
    pub fn from_flag(flag: Option<&str>) -> Skills {
        match flag {
            None => Skills::Example,
            Some("none") => Skills::None,
            Some(path) => Skills::File(PathBuf::from(path)),
        }
    }
}

/// One `--treatment NAME[=SKILLS_FILE]`: a method label and where its library comes from.
#[derive(Debug, Clone, PartialEq)]
pub struct TreatmentChoice {
    pub name: String,
    pub skills: Skills,
}

impl TreatmentChoice {
    /// Parses `NAME[=SKILLS_FILE]`. `CONTROL` alone has no library; another name alone takes `default`
    /// (the `--skills` library); `NAME=none` has none; `NAME=FILE` reads FILE.
    pub fn parse(flag: &str, default: &Skills) -> anyhow::Result<TreatmentChoice> {
        let (name, file) = match flag.split_once('=') {
            Some((n, f)) => (n.trim(), Some(f.trim())),
            None => (flag.trim(), None),
        };
        if name.is_empty() {
            bail!("--treatment '{flag}': expected NAME or NAME=SKILLS_FILE, and the name is empty");
        }
        let skills = match file {
            Some("") => bail!("--treatment '{flag}': expected NAME=SKILLS_FILE, and the file is empty"),
            Some(f) => Skills::from_flag(Some(f)),
            None if name == CONTROL => Skills::None,
            None => default.clone(),
        };
        if name == CONTROL && skills != Skills::None {
            bail!(
                "--treatment '{flag}': CONTROL is the treatment without a skill library; give the library another name"
            );
        }
        Ok(TreatmentChoice { name: name.to_string(), skills })
    }
}

/// The label of the treatment without a skill library.
pub const CONTROL: &str = "CONTROL";

/// What a sweep runs: everything the planner needs, before the data directory is read.
#[derive(Debug, Clone)]
pub struct SweepSettings {
    pub sites: Vec<Site>,
    pub conditions: Vec<Condition>,
    /// A file shaped like `data/calibration_set.json` that limits each listed site to its families.
    pub families: Option<PathBuf>,
    /// `--treatment NAME[=SKILLS_FILE]` flags, in order. Empty: one treatment, `skills`, labelled by the
    /// library's `method` (or `CONTROL` without skills).
    pub treatments: Vec<String>,
    /// The library of a treatment flag that names none (`--skills`).
    pub skills: Skills,
    pub agent: String,
    pub model: Option<String>,
    pub provider: Option<String>,
    pub temperature: Option<f64>,
    pub count: u32,
    pub max_steps: u32,
    pub task_timeout_s: u64,
    pub max_retries: u32,
    pub seed: u64,
    pub cost_budget_usd: Option<f64>,
    /// Perturbation profile (default `data/perturbations/default.json` when present).
    pub profile: Option<PathBuf>,
    /// Data directory: tasks/, skills/, perturbations/, DIGESTS.json.
    pub data: PathBuf,
    /// Records of an earlier run (`per_task.jsonl`, `contract.json` beside it) whose units are not run again.
    pub reuse_baseline: Option<PathBuf>,
    /// Which rules score every attempt (`--evaluator webarena|strict`); a frozen contract field.
    pub evaluator: skillshift_common::evaluate::Mode,
    /// Run by `--simulate` workers, whose records are made up: a frozen contract field
    /// (docs/formats.md#contract), and only simulated workers take its units.
    pub simulated: bool,
}

impl SweepSettings {
    /// The defaults of `sweep start`: the full grid, one rep, the `skills` agent with the example library.
    pub fn full_grid(data: PathBuf) -> SweepSettings {
        SweepSettings {
            sites: Site::ALL.to_vec(),
            conditions: Condition::ALL.to_vec(),
            families: None,
            treatments: Vec::new(),
            skills: Skills::Example,
            agent: "skills".into(),
            model: None,
            provider: None,
            temperature: None,
            count: 1,
            max_steps: 10,
            task_timeout_s: 600,
            max_retries: 2,
            seed: 0,
            cost_budget_usd: None,
            profile: None,
            data,
            reuse_baseline: None,
            evaluator: Default::default(),
            simulated: false,
        }
    }

    /// The checks that need no file: counts, budgets and the agent's requirements.
    pub fn validate(&self) -> anyhow::Result<()> {
        if self.sites.is_empty() {
            bail!("--sites names no site");
        }
        if self.conditions.is_empty() {
            bail!("--conditions names no condition");
        }
        if self.count == 0 {
            bail!("--count must be at least 1");
        }
        if self.max_steps == 0 {
            bail!("--max-steps must be at least 1");
        }
        if let Some(b) = self.cost_budget_usd {
            if !b.is_finite() || b <= 0.0 {
                bail!("--cost-budget must be a positive number of USD, got {b}");
            }
        }
        if let Some(t) = &self.reuse_baseline {
            if !t.exists() {
                bail!("--reuse-baseline {}: no such file", t.display());
            }
        }
        if let Some(t) = self.temperature {
            if !t.is_finite() || t < 0.0 {
                bail!("--temperature must be a non-negative number, got {t}");
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn treatment_flags_name_a_label_and_where_its_library_comes_from() {
        let parse = |f: &str| TreatmentChoice::parse(f, &Skills::Example);
        assert_eq!(parse("CONTROL").ok(), Some(TreatmentChoice { name: "CONTROL".into(), skills: Skills::None }));
        assert_eq!(parse("ASI").ok(), Some(TreatmentChoice { name: "ASI".into(), skills: Skills::Example }));
        let file = TreatmentChoice { name: "ASI".into(), skills: Skills::File("skills/asi.json".into()) };
        assert_eq!(parse("ASI=skills/asi.json").ok(), Some(file));
        assert_eq!(parse("B=none").ok(), Some(TreatmentChoice { name: "B".into(), skills: Skills::None }));
        let refused = |f: &str| parse(f).expect_err("refused").to_string();
        assert!(refused("=x.json").contains("the name is empty"));
        assert!(refused("ASI=").contains("the file is empty"));
        assert!(refused("CONTROL=skills/asi.json").contains("CONTROL is the treatment without a skill library"));
    }
}
