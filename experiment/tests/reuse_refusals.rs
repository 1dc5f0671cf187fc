//! Baseline reuse is refused, naming why, when the earlier run cannot stand in for the baseline: too old, short
//! of a unit, another library, another frozen contract. Records are written by hand; nothing runs.
#![allow(clippy::unwrap_used)] // a test crate: a failed unwrap is a failed test

use std::path::{Path, PathBuf};

use skillshift_common::ids::SweepId;
use skillshift_common::skills::{SkillLibrary, SKILLS_SCHEMA};
use skillshift_common::{Condition, Outcome, Record, Site};
use skillshift_coordinator::limits::Limits;
use skillshift_coordinator::planner::{self, SweepSpec, TreatmentSpec};
use skillshift_experiment::reuse;

fn library(method: &str) -> SkillLibrary {
    SkillLibrary { schema: SKILLS_SCHEMA.into(), method: method.into(), skills: vec![] }
}

fn spec() -> SweepSpec {
    let mut s = SweepSpec::full_grid(TreatmentSpec { name: "CONTROL".into(), skills: None });
    s.treatments.push(TreatmentSpec { name: "ASI".into(), skills: Some(library("ASI")) });
    s.sites = vec![Site::Gitlab];
    s.conditions = vec![Condition::Src, Condition::Tgt];
    s.families.insert(Site::Gitlab, vec![0, 1]);
    s
}

/// An earlier run of `of` (its CONTROL units, or the first `n` of them), finished at `finished_at`.
fn earlier(dir: &Path, of: &SweepSpec, n: usize, finished_at: &str) -> PathBuf {
    let (contract, digest) = planner::contract(of);
    let mut lines = String::new();
    let units = planner::plan(of, &Limits::default()).unwrap();
    for (i, u) in units.iter().filter(|u| u.treatment == 0).take(n).enumerate() {
        let spec = planner::attempt_spec(&SweepId::from("sw-old"), of, &digest, u, 0);
        let mut r = Record::for_attempt(&spec);
        r.success = Some(i % 2 == 0);
        r.outcome = Some(if i % 2 == 0 { Outcome::Success } else { Outcome::Failure });
        r.steps = Some(3);
        r.finished_at = Some(finished_at.into());
        lines.push_str(&serde_json::to_string(&r).unwrap());
        lines.push('\n');
    }
    let path = dir.join("per_task.jsonl");
    std::fs::write(&path, lines).unwrap();
    std::fs::write(dir.join("contract.json"), serde_json::to_string_pretty(&contract).unwrap()).unwrap();
    path
}

fn now() -> String {
    chrono::Utc::now().to_rfc3339()
}

#[test]
fn a_fresh_complete_baseline_stands_in_for_the_first_treatment() {
    let dir = tempfile::tempdir().unwrap();
    let path = earlier(dir.path(), &spec(), 4, &now());
    let b = reuse::for_spec(&path, &spec()).unwrap();
    assert_eq!(b.treatments, vec!["CONTROL".to_string()]);
    assert_eq!(b.records(), 4);
    let rest = b.remaining(&spec()).unwrap();
    assert_eq!(rest.treatments.iter().map(|t| t.name.as_str()).collect::<Vec<_>>(), vec!["ASI"]);
    assert_eq!(planner::contract(&rest).1, b.digest, "dropping a treatment keeps the digest");
}

#[test]
fn refusals_name_their_reason() {
    let refused = |path: &Path, s: &SweepSpec| reuse::for_spec(path, s).unwrap_err().to_string();
    let dir = tempfile::tempdir().unwrap();
    let old = earlier(dir.path(), &spec(), 4, "2026-01-01T00:00:00Z");
    let e = refused(&old, &spec());
    assert!(e.contains("more than 7 days ago"), "{e}");

    let dir = tempfile::tempdir().unwrap();
    let short = earlier(dir.path(), &spec(), 3, &now());
    let e = refused(&short, &spec());
    assert!(e.contains("lacks 1 of the units this sweep plans for CONTROL"), "{e}");

    let dir = tempfile::tempdir().unwrap();
    let path = earlier(dir.path(), &spec(), 4, &now());
    let mut other = spec();
    other.max_steps = 30;
    other.seed = 7;
    let e = refused(&path, &other);
    assert!(e.contains("its frozen contract differs in max_steps, seed"), "{e}");

    let mut swapped = spec();
    swapped.treatments.swap(0, 1);
    let e = refused(&path, &swapped);
    assert!(e.contains("no records of the baseline treatment ASI (the first --treatment); it holds CONTROL"), "{e}");

    let mut lib = spec();
    lib.treatments[0].skills = Some(library("CONTROL"));
    let e = refused(&path, &lib);
    assert!(e.contains("treatment CONTROL's skill library is null there"), "{e}");

    let mut alone = spec();
    alone.treatments.truncate(1);
    // A file holding every treatment the sweep names is refused when it is read (docs/cli.md#baseline-reuse).
    let e = refused(&path, &alone);
    assert!(e.contains("it holds every treatment of the sweep (CONTROL); nothing is left to run"), "{e}");
}
