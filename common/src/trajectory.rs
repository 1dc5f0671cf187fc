//! An attempt's trajectory (docs/formats.md#trajectories): what the agent saw
//! and did, step by step, and what the scorer found, so a failure can be
//! explained with evidence.
//!
//! The worker builds it, the coordinator stores it beside the record, and an
//! export writes one file per attempt at [`Trajectory::file_name`], named by
//! the record's `trajectory` field. Secrets never reach it: [`redact`] runs
//! before it leaves the worker.

use serde::{Deserialize, Serialize};

use crate::attempt::AttemptSpec;
use crate::ids::{Condition, Uid};
use crate::perturbation::AppliedPerturbation;
use crate::record::Outcome;
use crate::score::{EvaluatorKind, ScoreVerdict};

/// The `schema` value of every trajectory file.
pub const SCHEMA: &str = "skillshift.trajectory/1";

/// What every redacted secret is replaced with.
pub const REDACTED: &str = "[redacted]";

/// The directory, beside the records file, that holds the trajectories.
pub const DIR: &str = "trajectories";

/// Which steps keep a screenshot (`--screenshots none | failures | all`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ScreenshotPolicy {
    None,
    /// Only the steps of attempts that did not succeed (the sweep default).
    #[default]
    Failures,
    All,
}

/// A `--screenshots` value that names no policy (clipped to [`crate::text::CLIP_CHARS`]).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown screenshot policy '{0}': expected none, failures or all")]
pub struct UnknownScreenshotPolicy(pub String);

impl ScreenshotPolicy {
    pub fn parse(text: &str) -> Result<Self, UnknownScreenshotPolicy> {
        match text {
            "none" => Ok(ScreenshotPolicy::None),
            "failures" => Ok(ScreenshotPolicy::Failures),
            "all" => Ok(ScreenshotPolicy::All),
            other => Err(UnknownScreenshotPolicy(crate::text::clip(other, crate::text::CLIP_CHARS).into_owned())),
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            ScreenshotPolicy::None => "none",
            ScreenshotPolicy::Failures => "failures",
            ScreenshotPolicy::All => "all",
        }
    }
}

/// The attempt a trajectory belongs to: the record's key.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Key {
    pub sweep: String,
    pub treatment: String,
    pub uid: Uid,
    pub condition: Condition,
    pub rep: u32,
    pub attempt: u32,
}

impl Key {
    pub fn for_attempt(spec: &AttemptSpec) -> Self {
        Key {
            sweep: spec.sweep.clone(),
            treatment: spec.treatment.clone(),
            uid: spec.uid,
            condition: spec.condition,
            rep: spec.rep,
            attempt: spec.attempt,
        }
    }
}

/// The LLM call behind one step.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct LlmCall {
    pub model: String,
    pub reply: String,
    pub tokens_in: u64,
    pub tokens_out: u64,
    pub latency_ms: u64,
}

/// One step of a skill's own steps.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SkillSubStep {
    pub action: String,
    /// The step's locator, as the library wrote it (role and name, or a URL).
    pub target: Option<serde_json::Value>,
    pub ok: bool,
    pub error: Option<String>,
}

/// A step that called a skill.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SkillCall {
    pub name: String,
    pub args: serde_json::Map<String, serde_json::Value>,
    pub ok: bool,
    pub error: Option<String>,
    pub steps: Vec<SkillSubStep>,
}

impl SkillCall {
    /// The 0-based index of the sub-step that failed, if one did.
    pub fn failed_step(&self) -> Option<usize> {
        self.steps.iter().position(|s| !s.ok)
    }
}

/// One agent step: exactly one of `action` and `skill` is set.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Step {
    /// 1-based.
    pub step: u32,
    pub url: String,
    pub title: String,
    /// The text the agent was given.
    pub observation: String,
    pub action: Option<String>,
    pub skill: Option<SkillCall>,
    pub last_action_error: Option<String>,
    /// The perturbations active on this page, as their phrases (`modal`, `relabel: 'Issues' -> 'Tickets'`):
    /// written and read through [`AppliedPerturbation`] ([`Step::applied_perturbations`]).
    #[serde(default)]
    pub perturbations: Vec<String>,
    pub llm: Option<LlmCall>,
    pub duration_ms: u64,
    /// `screenshots/<sha256>.png`, relative to the trajectories directory.
    pub screenshot: Option<String>,
    /// Skills an external agent ran by itself during this step and reported (`skill_report`); left
    /// out when there are none.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub reported_skills: Vec<ReportedSkill>,
    /// JavaScript dialogs the page opened during this step and how the harness answered them, as
    /// WebArena's environment does (`beforeunload` accepted, the rest dismissed); left out when there are
    /// none.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub dialogs: Vec<DialogNote>,
}

impl Step {
    /// The perturbations active on this step's page, read from their phrases.
    pub fn applied_perturbations(&self) -> impl Iterator<Item = AppliedPerturbation> + '_ {
        self.perturbations.iter().map(|p| AppliedPerturbation::parse(p))
    }
}

/// A JavaScript dialog a page opened during a step.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DialogNote {
    /// `alert`, `confirm`, `prompt` or `beforeunload`.
    #[serde(rename = "type")]
    pub kind: String,
    pub message: String,
    /// `accepted` or `dismissed`.
    pub action: String,
}

/// A skill an external agent ran by itself and reported: it counts in the record's `skill_calls`
/// and `skill_failures` like a skill the harness ran.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ReportedSkill {
    pub name: String,
    pub ok: bool,
    pub error: Option<String>,
}

/// One evaluator's finding.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EvaluatorEvidence {
    #[serde(rename = "type")]
    pub kind: EvaluatorKind,
    pub verdict: ScoreVerdict,
    pub expected: String,
    pub got: String,
}

/// The scorer's evidence.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ScoreEvidence {
    pub verdict: ScoreVerdict,
    pub evaluators: Vec<EvaluatorEvidence>,
}

/// A whole attempt.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Trajectory {
    pub schema: String,
    pub key: Key,
    pub intent: String,
    pub start_url: String,
    pub agent: String,
    pub model: Option<String>,
    pub steps: Vec<Step>,
    pub score: Option<ScoreEvidence>,
    pub outcome: Outcome,
    pub failure_category: Option<String>,
    pub error: Option<String>,
    /// The attempt's network trace, HAR 1.2 (docs/formats.md#trajectories); left out when none was kept.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub network: Option<crate::har::Har>,
}

impl Trajectory {
    /// An empty trajectory of the attempt `spec`, before its first step.
    pub fn for_attempt(spec: &AttemptSpec, intent: &str, start_url: &str, agent: &str) -> Self {
        Trajectory {
            schema: SCHEMA.to_string(),
            key: Key::for_attempt(spec),
            intent: intent.to_string(),
            start_url: start_url.to_string(),
            agent: agent.to_string(),
            model: None,
            steps: Vec::new(),
            score: None,
            outcome: Outcome::Error,
            failure_category: None,
            error: None,
            network: None,
        }
    }

    /// The file's path relative to the records file:
    /// `trajectories/<treatment>/<uid>.<condition>.<rep>.<attempt>.json`.
    pub fn file_name(key: &Key) -> String {
        format!("{DIR}/{}/{}.{}.{}.{}.json", safe_segment(&key.treatment), key.uid, key.condition, key.rep, key.attempt)
    }
}

/// A treatment label as one path segment: anything outside `[A-Za-z0-9_.-]`
/// becomes `_`, and `.`/`..` cannot escape the directory.
pub fn safe_segment(label: &str) -> String {
    let s: String = label
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.') { c } else { '_' })
        .collect();
    if s.is_empty() || s.chars().all(|c| c == '.') {
        format!("_{s}")
    } else {
        s
    }
}

/// The screenshot's path relative to the trajectories directory, by content digest.
pub fn screenshot_name(sha256_hex: &str) -> String {
    format!("screenshots/{sha256_hex}.png")
}

/// Replaces every occurrence of each non-empty secret in `text` by [`REDACTED`],
/// and the value of any `Authorization`/`Bearer` credential.
pub fn redact(text: &str, secrets: &[String]) -> String {
    let mut out = text.to_string();
    for s in secrets.iter().filter(|s| s.len() >= 3) {
        if out.contains(s.as_str()) {
            out = out.replace(s.as_str(), REDACTED);
        }
    }
    redact_bearer(&out)
}

fn redact_bearer(text: &str) -> String {
    const MARK: &str = "Bearer ";
    if !text.contains(MARK) {
        return text.to_string();
    }
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(i) = rest.find(MARK) {
        out.push_str(&rest[..i + MARK.len()]);
        rest = &rest[i + MARK.len()..];
        let end = rest.find(|c: char| c.is_whitespace() || c == '"' || c == '\'').unwrap_or(rest.len());
        if end > 0 {
            out.push_str(REDACTED);
        }
        rest = &rest[end..];
    }
    out.push_str(rest);
    out
}

impl Trajectory {
    /// Redacts `secrets` from every free text the trajectory carries.
    pub fn redact(&mut self, secrets: &[String]) {
        let r = |t: &mut String| *t = redact(t, secrets);
        r(&mut self.intent);
        r(&mut self.start_url);
        if let Some(e) = self.error.as_mut() {
            r(e);
        }
        for step in &mut self.steps {
            r(&mut step.url);
            r(&mut step.title);
            r(&mut step.observation);
            if let Some(a) = step.action.as_mut() {
                r(a);
            }
            if let Some(e) = step.last_action_error.as_mut() {
                r(e);
            }
            for p in &mut step.perturbations {
                r(p);
            }
            if let Some(llm) = step.llm.as_mut() {
                r(&mut llm.reply);
            }
            for reported in &mut step.reported_skills {
                if let Some(e) = reported.error.as_mut() {
                    r(e);
                }
            }
            for d in &mut step.dialogs {
                r(&mut d.message);
            }
            if let Some(skill) = step.skill.as_mut() {
                if let Some(e) = skill.error.as_mut() {
                    r(e);
                }
                for v in skill.args.values_mut() {
                    if let serde_json::Value::String(s) = v {
                        r(s);
                    }
                }
                for sub in &mut skill.steps {
                    if let Some(e) = sub.error.as_mut() {
                        r(e);
                    }
                    if let Some(target) = sub.target.as_mut() {
                        redact_strings(target, secrets);
                    }
                }
            }
        }
        if let Some(score) = self.score.as_mut() {
            for ev in &mut score.evaluators {
                r(&mut ev.expected);
                r(&mut ev.got);
            }
        }
        if let Some(har) = self.network.as_mut() {
            redact_har(har, secrets);
        }
    }
}

/// Headers whose values are credentials whatever they hold: their values become [`REDACTED`].
pub const SECRET_HEADERS: &[&str] = &["cookie", "set-cookie", "authorization", "proxy-authorization"];

/// Redacts a network trace: the values of [`SECRET_HEADERS`] and of every cookie become
/// [`REDACTED`]; `secrets` are redacted from URLs, query strings, other headers, post data and bodies.
fn redact_har(har: &mut crate::har::Har, secrets: &[String]) {
    let r = |t: &mut String| *t = redact(t, secrets);
    let headers = |hs: &mut Vec<crate::har::NameValue>| {
        for h in hs {
            if SECRET_HEADERS.iter().any(|s| h.name.eq_ignore_ascii_case(s)) {
                h.value = REDACTED.to_string();
            } else {
                r(&mut h.value);
            }
        }
    };
    for e in &mut har.log.entries {
        let (req, resp) = (&mut e.request, &mut e.response);
        r(&mut req.url);
        req.query_string.iter_mut().for_each(|q| r(&mut q.value));
        headers(&mut req.headers);
        headers(&mut resp.headers);
        for c in req.cookies.iter_mut().chain(resp.cookies.iter_mut()) {
            c.value = REDACTED.to_string();
        }
        if let Some(d) = req.post_data.as_mut() {
            r(&mut d.text);
        }
        if let Some(t) = resp.content.text.as_mut() {
            r(t);
        }
        r(&mut resp.redirect_url);
        r(&mut resp.status_text);
    }
}

/// Redacts every string inside a JSON value.
fn redact_strings(v: &mut serde_json::Value, secrets: &[String]) {
    match v {
        serde_json::Value::String(s) => *s = redact(s, secrets),
        serde_json::Value::Array(a) => a.iter_mut().for_each(|x| redact_strings(x, secrets)),
        serde_json::Value::Object(o) => o.values_mut().for_each(|x| redact_strings(x, secrets)),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ids::Condition;

    fn key() -> Key {
        Key {
            sweep: "s1".into(),
            treatment: "ASI".into(),
            uid: "skillshift.gitlab.v2.9".parse().expect("uid"),
            condition: Condition::TgtExec,
            rep: 0,
            attempt: 1,
        }
    }

    #[test]
    fn the_file_name_is_the_formats_path() {
        assert_eq!(Trajectory::file_name(&key()), "trajectories/ASI/skillshift.gitlab.v2.9.tgt-exec.0.1.json");
    }

    #[test]
    fn a_treatment_label_cannot_leave_the_directory() {
        assert_eq!(safe_segment("../x"), ".._x");
        assert_eq!(safe_segment(".."), "_..");
        assert_eq!(safe_segment("a/b c"), "a_b_c");
        assert_eq!(safe_segment(""), "_");
    }

    #[test]
    fn secrets_and_bearer_tokens_are_redacted() {
        let s = vec!["hunter2pw".to_string(), "".to_string()];
        assert_eq!(
            redact("type [3] [hunter2pw] then Authorization: Bearer abc.def done", &s),
            "type [3] [[redacted]] then Authorization: Bearer [redacted] done"
        );
        assert_eq!(redact("nothing here", &s), "nothing here");
    }

    #[test]
    fn a_network_trace_is_redacted_cookies_credentials_and_secrets() {
        let text = r#"{"log": {"entries": [{"request": {"method": "POST", "url": "http://a/login?pw=hunter2pw",
            "queryString": [{"name": "pw", "value": "hunter2pw"}],
            "headers": [{"name": "Cookie", "value": "sid=abc"}, {"name": "Accept", "value": "text/html"},
                        {"name": "authorization", "value": "Basic eA=="}],
            "cookies": [{"name": "sid", "value": "abc"}],
            "postData": {"mimeType": "application/x-www-form-urlencoded", "text": "user=a&pass=hunter2pw"}},
            "response": {"status": 302, "headers": [{"name": "Set-Cookie", "value": "sid=new; Path=/"}],
            "cookies": [{"name": "sid", "value": "new"}], "content": {"text": "token hunter2pw"}}}]}}"#;
        let mut t = Trajectory {
            schema: SCHEMA.into(),
            key: key(),
            intent: String::new(),
            start_url: String::new(),
            agent: "skills".into(),
            model: None,
            steps: Vec::new(),
            score: None,
            outcome: Outcome::Success,
            failure_category: None,
            error: None,
            network: Some(serde_json::from_str(text).expect("har")),
        };
        t.redact(&["hunter2pw".to_string()]);
        let v = serde_json::to_value(&t).expect("json");
        let e = &v["network"]["log"]["entries"][0];
        assert_eq!(e["request"]["url"], "http://a/login?pw=[redacted]");
        assert_eq!(e["request"]["queryString"][0]["value"], "[redacted]");
        assert_eq!(e["request"]["headers"][0]["value"], "[redacted]");
        assert_eq!(e["request"]["headers"][1]["value"], "text/html");
        assert_eq!(e["request"]["headers"][2]["value"], "[redacted]");
        assert_eq!(e["request"]["cookies"][0], serde_json::json!({"name": "sid", "value": "[redacted]"}));
        assert_eq!(e["request"]["postData"]["text"], "user=a&pass=[redacted]");
        assert_eq!(e["response"]["headers"][0]["value"], "[redacted]");
        assert_eq!(e["response"]["cookies"][0]["value"], "[redacted]");
        assert_eq!(e["response"]["content"]["text"], "token [redacted]");
    }

    #[test]
    fn a_trajectory_round_trips_through_json_with_the_pinned_field_names() {
        let mut t = Trajectory {
            schema: SCHEMA.into(),
            key: key(),
            intent: "do it".into(),
            start_url: "http://x/".into(),
            agent: "skills".into(),
            model: None,
            steps: vec![Step {
                step: 1,
                url: "http://x/".into(),
                title: "X".into(),
                observation: "[1] link 'Issues'".into(),
                action: None,
                skill: Some(SkillCall {
                    name: "create_issue".into(),
                    args: serde_json::Map::new(),
                    ok: false,
                    error: Some("no element".into()),
                    steps: vec![SkillSubStep {
                        action: "click".into(),
                        target: None,
                        ok: false,
                        error: Some("no element".into()),
                    }],
                }),
                last_action_error: None,
                perturbations: vec!["modal".into()],
                llm: None,
                duration_ms: 3,
                screenshot: None,
                reported_skills: Vec::new(),
                dialogs: Vec::new(),
            }],
            score: Some(ScoreEvidence {
                verdict: ScoreVerdict::Fail,
                evaluators: vec![EvaluatorEvidence {
                    kind: EvaluatorKind::UrlMatch,
                    verdict: ScoreVerdict::Fail,
                    expected: "a".into(),
                    got: "b".into(),
                }],
            }),
            outcome: Outcome::Failure,
            failure_category: Some("skill_failure".into()),
            error: None,
            network: None,
        };
        t.redact(&["Issues".to_string()]);
        let v = serde_json::to_value(&t).expect("json");
        assert_eq!(v["schema"], "skillshift.trajectory/1");
        assert_eq!(v["key"]["condition"], "tgt-exec");
        assert_eq!(v["steps"][0]["observation"], "[1] link '[redacted]'");
        assert_eq!(v["steps"][0]["skill"]["steps"][0]["ok"], false);
        assert_eq!(v["score"]["evaluators"][0]["type"], "url_match");
        assert_eq!(v["outcome"], "failure");
        let back: Trajectory = serde_json::from_value(v).expect("back");
        assert_eq!(back, t);
        assert_eq!(back.steps[0].skill.as_ref().and_then(SkillCall::failed_step), Some(0));
    }
}
