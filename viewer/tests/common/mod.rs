//! A hand-built export directory, written with the project's own types: one
//! sweep, treatment `ASI` with a success on gitlab src, a skill failure and a
//! wrong URL on gitlab tgt-exec (both with trajectories, the first with a
//! screenshot), a worker-lost error without one, and one `CONTROL` record.
#![allow(dead_code)]

use std::path::Path;

use sha2::{Digest, Sha256};
use skillshift_common::record::{Outcome, Record};
use skillshift_common::score::{EvaluatorKind, ScoreVerdict};
use skillshift_common::trajectory::{
    self, EvaluatorEvidence, Key, LlmCall, ScoreEvidence, SkillCall, SkillSubStep, Step, Trajectory,
};
use skillshift_common::{Condition, Uid};

pub const SWEEP: &str = "sw-test";

pub fn uid(s: &str) -> Uid {
    s.parse().expect("uid")
}

fn record(treatment: &str, u: &str, c: Condition, outcome: Outcome, steps: Option<u32>) -> Record {
    let mut r = Record::new(uid(u), c);
    r.treatment = Some(treatment.into());
    r.sweep = Some(SWEEP.into());
    r.rep = Some(0);
    r.attempt = Some(0);
    r.outcome = Some(outcome);
    r.success = (outcome != Outcome::Error).then_some(outcome == Outcome::Success);
    r.steps = steps;
    r.skill_calls = steps.map(|_| 1);
    r.skill_failures = steps.map(|_| u32::from(outcome != Outcome::Success));
    r.duration_ms = Some(1200);
    r
}

fn key(r: &Record) -> Key {
    Key {
        sweep: SWEEP.into(),
        treatment: r.treatment().to_string(),
        uid: r.uid,
        condition: r.condition,
        rep: r.rep(),
        attempt: r.attempt(),
    }
}

fn step(n: u32, observation: &str) -> Step {
    Step {
        step: n,
        url: "http://127.0.0.1:9/project".into(),
        title: "Project".into(),
        observation: observation.into(),
        action: None,
        skill: None,
        last_action_error: None,
        perturbations: Vec::new(),
        llm: None,
        duration_ms: 40,
        screenshot: None,
        reported_skills: Vec::new(),
        dialogs: Vec::new(),
    }
}

fn trajectory_of(r: &Record, steps: Vec<Step>, category: &str, evaluator: EvaluatorEvidence) -> Trajectory {
    Trajectory {
        schema: trajectory::SCHEMA.into(),
        key: key(r),
        intent: "Open a new issue titled <b>Bug</b>".into(),
        start_url: "http://127.0.0.1:9/".into(),
        agent: "skills".into(),
        model: Some("test-model".into()),
        steps,
        score: Some(ScoreEvidence { verdict: ScoreVerdict::Fail, evaluators: vec![evaluator] }),
        outcome: r.outcome(),
        failure_category: Some(category.into()),
        error: None,
        network: None,
    }
}

/// The skill failure's network trace: the start page before step 1, the tickets page at step 1, and at step
/// 2 the skill's failed POST from a second tab, its URL hostile text.
pub fn network_trace() -> skillshift_common::har::Har {
    let entry = |method: &str, url: &str, status: i64, step: u32, tab: u32| {
        serde_json::json!({"request": {"method": method, "url": url, "headers": [{"name": "Cookie", "value": "sid=1"}]},
            "response": {"status": status, "content": {"text": "a body the panel never shows"}},
            "_step": step, "_tab": tab, "_resourceType": "Document"})
    };
    let entries = vec![
        entry("GET", "http://127.0.0.1:9/", 200, 0, 0),
        entry("GET", "http://127.0.0.1:9/project/tickets", 200, 1, 0),
        entry("GET", "http://127.0.0.1:9/static/app.css", 200, 1, 0),
        entry("POST", "http://127.0.0.1:9/project/issues?q=<script>alert(2)</script>", 422, 2, 1),
    ];
    serde_json::from_value(serde_json::json!({"log": {"entries": entries, "_dropped": 3}})).expect("har")
}

fn write_trajectory(dir: &Path, r: &mut Record, t: &Trajectory) {
    let rel = Trajectory::file_name(&t.key);
    let path = dir.join(&rel);
    std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
    std::fs::write(&path, serde_json::to_vec_pretty(t).expect("json")).expect("write trajectory");
    r.trajectory = Some(rel);
}

/// The digest the screenshot is stored under.
pub fn digest(png: &[u8]) -> String {
    hex::encode(Sha256::digest(png))
}

/// Writes the export into `dir`, with `png` as the one screenshot; returns its digest.
pub fn write_export(dir: &Path, png: &[u8]) -> String {
    let sha = digest(png);
    let shots = dir.join(trajectory::DIR).join("screenshots");
    std::fs::create_dir_all(&shots).expect("mkdir screenshots");
    std::fs::write(dir.join(trajectory::DIR).join(trajectory::screenshot_name(&sha)), png).expect("write png");

    let ok = record("ASI", "skillshift.gitlab.v1.3", Condition::Src, Outcome::Success, Some(2));

    let mut skill = record("ASI", "skillshift.gitlab.v2.3", Condition::TgtExec, Outcome::Failure, Some(2));
    skill.failure_category = Some("skill_failure".into());
    let mut s1 = step(1, "[1] RootWebArea 'Project'\n[2] link 'Tickets'\n[3] link 'Merge requests'");
    s1.perturbations = vec!["relabel: 'Issues' -> 'Tickets'".into()];
    s1.action = Some("click [2]".into());
    s1.llm = Some(LlmCall {
        model: "test-model".into(),
        reply: "I will click <script>alert(1)</script> Tickets".into(),
        tokens_in: 900,
        tokens_out: 30,
        latency_ms: 700,
    });
    let mut s2 = step(2, "[1] RootWebArea 'Tickets'\n[4] button 'New ticket'");
    s2.skill = Some(SkillCall {
        name: "create_issue".into(),
        args: serde_json::Map::from_iter([("title".to_string(), serde_json::json!("Bug"))]),
        ok: false,
        error: Some("no element with role button and name 'New issue'".into()),
        steps: vec![
            SkillSubStep { action: "goto".into(), target: Some(serde_json::json!("/issues")), ok: true, error: None },
            SkillSubStep {
                action: "click".into(),
                target: Some(serde_json::json!({"role": "button", "name": "New issue"})),
                ok: false,
                error: Some("no element with role button and name 'New issue'".into()),
            },
        ],
    });
    s2.screenshot = Some(trajectory::screenshot_name(&sha));
    let t = trajectory_of(
        &skill,
        vec![s1, s2],
        "skill_failure",
        EvaluatorEvidence {
            kind: EvaluatorKind::ProgramHtml,
            verdict: ScoreVerdict::Fail,
            expected: "an issue titled 'Bug'".into(),
            got: "no such issue".into(),
        },
    );
    let mut t = t;
    t.network = Some(network_trace());
    write_trajectory(dir, &mut skill, &t);

    let mut url = record("ASI", "skillshift.gitlab.v2.4", Condition::TgtExec, Outcome::Failure, Some(1));
    url.failure_category = Some("wrong_url".into());
    let mut u1 = step(1, "[1] RootWebArea 'Home'");
    u1.action = Some("stop [done]".into());
    let t = trajectory_of(
        &url,
        vec![u1],
        "wrong_url",
        EvaluatorEvidence {
            kind: EvaluatorKind::UrlMatch,
            verdict: ScoreVerdict::Fail,
            expected: "/project/issues".into(),
            got: "/".into(),
        },
    );
    write_trajectory(dir, &mut url, &t);

    let mut lost = record("ASI", "skillshift.gitlab.v2.5", Condition::TgtExec, Outcome::Error, None);
    lost.error = Some("worker_lost".into());
    lost.failure_category = Some("worker_lost".into());

    let control = record("CONTROL", "skillshift.gitlab.v1.3", Condition::Src, Outcome::Success, Some(3));

    let lines: String = [ok, skill, url, lost, control]
        .iter()
        .map(|r| format!("{}\n", serde_json::to_string(r).expect("record json")))
        .collect();
    std::fs::write(dir.join("per_task.jsonl"), lines).expect("write records");
    std::fs::write(dir.join("contract.json"), "{}\n").expect("write contract");
    sha
}

/// Evaluates `js` until it returns `true`, for at most 15 s.
pub async fn wait_for(s: &skillshift_worker::browser::Session, what: &str, js: &str) {
    let end = tokio::time::Instant::now() + std::time::Duration::from_secs(15);
    loop {
        if s.eval(js).await.ok() == Some(serde_json::Value::Bool(true)) {
            return;
        }
        if tokio::time::Instant::now() > end {
            let body = s.eval("document.body.innerText").await.unwrap_or_default();
            panic!("timed out waiting for {what}; the page shows:\n{body}");
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
}
