//! The sweep spec from a data directory: the skill library, the families file,
//! the perturbation profile, task file digests and image digests, read and
//! checked before anything is submitted.

use std::collections::BTreeMap;
use std::path::Path;

use anyhow::{bail, Context};
use skillshift_common::skills::{SkillLibrary, SKILLS_SCHEMA};
use skillshift_common::{Site, Version};
use skillshift_coordinator::planner::{digest_json, SweepSpec, TreatmentSpec};

use skillshift_worker::agents::llm::LlmConfig;
use skillshift_worker::agents::prompt;

use crate::settings::{Skills, SweepSettings, TreatmentChoice, CONTROL};

/// The treatment's library as the settings name it.
pub fn library(skills: &Skills, data: &Path) -> anyhow::Result<Option<SkillLibrary>> {
    Ok(match skills {
        Skills::None => None,
        Skills::File(path) => Some(SkillLibrary::load(path)?),
        Skills::Example => Some(example_library(data)?),
    })
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
    let text = skillshift_common::bounded::read_to_string(path, skillshift_common::bounded::MAX_FILE_BYTES)
        .with_context(|| format!("reading {}", path.display()))?;
    let v: serde_json::Value = serde_json::from_str(&text).with_context(|| format!("{}: not JSON", path.display()))?;
    let Some(sites) = v.get("sites").and_then(|s| s.as_object()) else {
        bail!("{}: expected an object with \"sites\": {{\"<site>\": {{\"families\": [...]}}}}", path.display());
    };
    if sites.is_empty() {
        bail!(
            "{}: \"sites\" is empty; name at least one site's families (without --families the sweep runs every family)",
            path.display()
        );
    }
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

/// Refuses a `--families` file that names a site the sweep's `--sites` leaves out: its families would be
/// dropped without a word. (`calibrate --site S` narrows the calibration set on purpose and does not ask.)
pub fn check_families_in_sites(s: &SweepSettings) -> anyhow::Result<()> {
    let Some(path) = &s.families else { return Ok(()) };
    let families = read_families(path)?;
    let outside: Vec<String> = families.keys().filter(|site| !s.sites.contains(site)).map(|x| x.to_string()).collect();
    if !outside.is_empty() {
        let sites: Vec<String> = s.sites.iter().map(|x| x.to_string()).collect();
        bail!(
            "{}: families for {}, which --sites {} leaves out; add {} to --sites or remove {} from the file",
            path.display(),
            outside.join(", "),
            sites.join(","),
            if outside.len() == 1 { "it" } else { "them" },
            if outside.len() == 1 { "it" } else { "them" },
        );
    }
    Ok(())
}

pub(crate) fn sha256_file(path: &Path) -> anyhow::Result<String> {
    let bytes = std::fs::read(path).with_context(|| format!("reading {}", path.display()))?;
    let v: serde_json::Value =
        serde_json::from_slice(&bytes).with_context(|| format!("{}: not JSON", path.display()))?;
    Ok(digest_json(&v))
}

/// The treatments the settings name, each with its library read.
pub fn treatments(s: &SweepSettings) -> anyhow::Result<Vec<TreatmentSpec>> {
    if s.treatments.is_empty() {
        let library = library(&s.skills, &s.data)?;
        let name = match &library {
            Some(l) => l.method.clone(),
            None => CONTROL.into(),
        };
        return Ok(vec![TreatmentSpec { name, skills: library }]);
    }
    s.treatments
        .iter()
        .map(|flag| {
            let choice = TreatmentChoice::parse(flag, &s.skills)?;
            let skills = library(&choice.skills, &s.data).with_context(|| format!("--treatment {flag}"))?;
            Ok(TreatmentSpec { name: choice.name, skills })
        })
        .collect()
}

/// The provider of the endpoint `cfg` calls; `--provider` naming another is refused (`sweep start`, `local`,
/// `calibrate` and `run` alike).
pub fn check_provider(asked: Option<&str>, cfg: &LlmConfig) -> anyhow::Result<String> {
    let provider = cfg.provider().to_string();
    if let Some(asked) = asked.filter(|p| *p != provider) {
        bail!("--provider {asked}: the endpoint {} is provider '{provider}' (set by OPENAI_BASE_URL)", cfg.base_url);
    }
    Ok(provider)
}

/// The frozen LLM fields as the agent will run them: for `reference`, the model it will request, the provider
/// of the endpoint, the temperature it will send and its prompt template's digest; the `skills` agent calls no
/// model, so none of them; an external `cmd:` agent is opaque, so what the flags declare.
fn llm_fields(s: &SweepSettings, spec: &mut SweepSpec) -> anyhow::Result<()> {
    match s.agent.as_str() {
        "reference" => {
            // The submitter resolves names only; the key is the workers' business, so a missing one is no error here.
            let lookup = |name: &str| match (name, std::env::var(name).ok()) {
                ("OPENAI_API_KEY", None) => Some("unused-for-names".to_string()),
                (_, v) => v,
            };
            let mut cfg = LlmConfig::from_lookup(s.model.clone(), lookup).context("--agent reference")?;
            if let Some(t) = s.temperature {
                cfg.temperature = t;
            }
            let provider = check_provider(s.provider.as_deref(), &cfg)?;
            spec.model = Some(cfg.model);
            spec.provider = Some(provider);
            spec.temperature = Some(cfg.temperature);
            spec.prompt_version = Some(prompt::template_digest());
        }
        "skills" => {
            if s.model.is_some() || s.temperature.is_some() || s.provider.is_some() {
                eprintln!(
                    "skillshift: warning: the skills agent calls no model; --model, --provider and --temperature \
                     are not part of its contract"
                );
            }
            spec.model = None;
            spec.provider = None;
            spec.temperature = None;
            spec.prompt_version = None;
        }
        _ => {
            spec.model = s.model.clone();
            spec.provider = s.provider.clone();
            spec.temperature = s.temperature;
            spec.prompt_version = None;
        }
    }
    Ok(())
}

/// The sweep spec the settings describe, with the data directory's digests.
pub fn build(s: &SweepSettings) -> anyhow::Result<SweepSpec> {
    s.validate()?;
    let mut treatments = treatments(s)?.into_iter();
    let first = treatments.next().context("no treatment")?;
    let mut spec = SweepSpec::full_grid(first);
    spec.treatments.extend(treatments);
    spec.agent = s.agent.clone();
    llm_fields(s, &mut spec)?;
    spec.sites = s.sites.clone();
    spec.conditions = s.conditions.clone();
    if let Some(f) = &s.families {
        let mut families = read_families(f)?;
        families.retain(|site, _| s.sites.contains(site));
        spec.families = families;
    }
    spec.count = s.count;
    spec.max_steps = s.max_steps;
    spec.task_timeout_s = s.task_timeout_s;
    spec.max_retries = s.max_retries;
    spec.seed = s.seed;
    spec.evaluator = s.evaluator;
    spec.simulated = s.simulated;
    spec.cost_budget_usd = s.cost_budget_usd;
    let profile = s.profile.clone().or_else(|| {
        let p = s.data.join("perturbations").join("default.json");
        p.exists().then_some(p)
    });
    if let Some(p) = profile {
        let text = skillshift_common::bounded::read_to_string(&p, skillshift_common::bounded::MAX_FILE_BYTES)
            .with_context(|| format!("reading {}", p.display()))?;
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
        let text = skillshift_common::bounded::read_to_string(&digests, skillshift_common::bounded::MAX_FILE_BYTES)
            .with_context(|| format!("reading {}", digests.display()))?;
        let map: BTreeMap<String, serde_json::Value> =
            serde_json::from_str(&text).with_context(|| format!("{}: expected an object", digests.display()))?;
        spec.image_digests = map.into_iter().filter_map(|(k, v)| v.as_str().map(|s| (k, s.to_string()))).collect();
    }
    spec.validate()?;
    Ok(spec)
}

/// How many units a spec plans (0 when it cannot be planned), counted without planning them.
pub fn units(spec: &SweepSpec) -> usize {
    let n = spec.validate().ok().and_then(|()| skillshift_coordinator::planner::unit_count(spec));
    n.map_or(0, |n| n as usize)
}
