//! A WebArena-Verified task run end to end, through `skillshift run ID --tasks FILE --site gitlab=URL
//! --evaluator webarena-verified`, in real headless Chromium against the embedded fixture GitLab: the
//! task changes the profile's bio; its `NetworkEventEvaluator` expects the form's POST (URL, method,
//! 303, the bio in the post data) and its `AgentResponseEvaluator` a `MUTATE` / `SUCCESS` response.
//! A scripted `cmd:` agent signs in, edits the bio and answers. The worker scores the attempt on its
//! answer and its network trace: a correct agent passes; one that does nothing, or does the work and
//! answers the wrong status, fails, each with its evaluators' evidence in the trajectory and the
//! failure category on the record. Response bodies are recorded only for a task whose evaluator
//! reads them. Under `--evaluator webarena` such a task is invalid (an `error` record), and a
//! WebArena task under `--evaluator webarena-verified` is scored by WebArena's rules, as before.

#![allow(clippy::unwrap_used, clippy::expect_used)] // a test: a failed unwrap is a failed test

#[path = "support/cli.rs"]
mod cli;

use std::net::SocketAddr;
use std::path::Path;

use serde_json::{json, Value};
use skillshift_common::{Site, Version};

const BIO: &str = "Kiwi pies since 2019.";

/// Signs in to the fixture GitLab, replaces the profile's bio with argv[2] and answers the structured
/// response; `idle` answers at once, `wrong` does the work and answers `NOT_FOUND_ERROR`.
const AGENT: &str = r#"
import json, re, sys

mode, bio = sys.argv[1], sys.argv[2]
task = json.loads(sys.stdin.readline())

def observe():
    line = sys.stdin.readline()
    if not line:
        sys.exit(0)
    return json.loads(line)

def act(action):
    print(json.dumps({"type": "action", "action": action}), flush=True)

def element(obs, role, name):
    m = re.search(r"\[(\d+)\] " + role + " '" + re.escape(name) + "'", obs["axtree"])
    if not m:
        sys.exit(f"no {role} '{name}' in:\n{obs['axtree']}")
    return m.group(1)

status = "NOT_FOUND_ERROR" if mode == "wrong" else "SUCCESS"
answer = json.dumps({"task_type": "MUTATE", "status": status, "retrieved_data": None})
obs = observe()
if mode == "idle":
    act(f"stop [{answer}]")
    sys.exit(0)
base = task["start_url"].split("/-/")[0]
act(f"type [{element(obs, 'textbox', 'Username or primary email')}] [byteblaze] [0]")
obs = observe()
act(f"type [{element(obs, 'textbox', 'Password')}] [hello1234] [1]")
obs = observe()
act(f"goto [{base}/-/profile]")
obs = observe()
field = element(obs, "textbox", "Bio")
act(f"click [{field}]")
obs = observe()
act("press [Meta+a]")
obs = observe()
act("press [Delete]")
obs = observe()
act(f"type [{field}] [{bio}] [0]")
obs = observe()
act(f"click [{element(obs, 'button', 'Update profile settings')}]")
obs = observe()
act(f"stop [{answer}]")
"#;

/// Task 1: the bio's POST and the response. Task 2: the same, plus an evaluator that reads a
/// response's content (so the attempt records bodies). Task 3: a WebArena task (`url_match` on the
/// sign-in page every attempt starts on, signed out).
fn task_file(dir: &Path) -> std::path::PathBuf {
    let response = json!({"evaluator": "AgentResponseEvaluator", "results_schema": {"type": "null"},
        "expected": {"task_type": "mutate", "status": "SUCCESS", "retrieved_data": null}});
    let post = json!({"evaluator": "NetworkEventEvaluator",
        "expected": {"url": "__GITLAB__/-/profile", "http_method": "POST", "response_status": 303,
                     "post_data": {"bio": BIO}}});
    let content = json!({"evaluator": "NetworkEventEvaluator",
        "expected": {"url": "__GITLAB__/-/profile", "response_content": {"bio": BIO}}});
    let verified = |id: u32, eval: Value| {
        json!({"sites": ["gitlab"], "task_id": id, "intent_template_id": 1, "start_urls": ["__GITLAB__/-/profile"],
            "intent": format!("Change the bio of my GitLab profile to \"{BIO}\""),
            "intent_template": "Change the bio of my GitLab profile to \"{{bio}}\"",
            "instantiation_dict": {"bio": BIO}, "revision": 1, "eval": eval})
    };
    let webarena = json!({"sites": ["gitlab"], "task_id": 3, "require_login": false, "storage_state": null,
        "start_url": "__GITLAB__/-/profile", "geolocation": null, "intent_template": "Open the sign-in page",
        "instantiation_dict": {}, "intent": "Open the sign-in page", "require_reset": false, "intent_template_id": 2,
        "eval": {"eval_types": ["url_match"], "reference_answers": null,
                 "reference_url": "__GITLAB__/users/sign_in", "program_html": []}});
    let tasks = json!([verified(1, json!([response, post])), verified(2, json!([response, post, content])), webarena]);
    let path = dir.join("verified.json");
    std::fs::write(&path, tasks.to_string()).unwrap();
    path
}

struct Attempt {
    record: Value,
    trajectory: Value,
}

/// `skillshift run ID --tasks FILE --site gitlab=BASE --evaluator EVALUATOR` with the agent in `mode`.
fn run(dir: &Path, base: &str, id: u32, mode: &str, evaluator: &str) -> Attempt {
    let script = dir.join("agent.py");
    std::fs::write(&script, AGENT).unwrap();
    let trajectory = dir.join(format!("t{id}-{mode}-{evaluator}.json"));
    let out = cli::bin()
        .args(["run", &id.to_string(), "--tasks"])
        .arg(task_file(dir))
        .args(["--site", &format!("gitlab={base}"), "--condition", "src", "--max-steps", "12"])
        .args(["--evaluator", evaluator, "--screenshots", "none"])
        .arg("--agent")
        .arg(format!("cmd:python3 {} {mode} '{BIO}'", script.display()))
        .arg("--trajectory")
        .arg(&trajectory)
        .arg("--data")
        .arg(dir)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(out.status.success(), "{stdout}\n{}", String::from_utf8_lossy(&out.stderr));
    let record = stdout.lines().rev().find_map(|l| serde_json::from_str(l).ok()).unwrap();
    let trajectory = serde_json::from_str(&std::fs::read_to_string(&trajectory).unwrap()).unwrap();
    Attempt { record, trajectory }
}

/// Each evaluator's (type, verdict) in the trajectory's score part.
fn verdicts(t: &Value) -> Vec<(String, String)> {
    t["score"]["evaluators"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| (e["type"].as_str().unwrap().to_string(), e["verdict"].as_str().unwrap().to_string()))
        .collect()
}

fn pair(kind: &str, verdict: &str) -> (String, String) {
    (kind.to_string(), verdict.to_string())
}

fn entries(t: &Value) -> &Vec<Value> {
    t["network"]["log"]["entries"].as_array().expect("a network trace")
}

/// The documents whose response body the trace kept.
fn bodies(t: &Value) -> usize {
    entries(t)
        .iter()
        .filter(|e| {
            e["_resourceType"] == "Document" && e["response"]["content"]["text"].as_str().is_some_and(|b| !b.is_empty())
        })
        .count()
}

#[test]
fn a_webarena_verified_task_is_scored_on_the_agents_answer_and_network_trace() {
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build().unwrap();
    let site =
        rt.block_on(skillshift_sites::serve(Site::Gitlab, Version::V1, SocketAddr::from(([127, 0, 0, 1], 0)))).unwrap();
    let base = site.base_url.clone();
    let dir = tempfile::tempdir().unwrap();

    // A correct agent passes both evaluators; the trajectory holds the POST they read, and no body.
    let done = run(dir.path(), &base, 1, "right", "webarena-verified");
    assert_eq!(done.record["outcome"], "success", "{}", done.record);
    assert_eq!(done.trajectory["score"]["verdict"], "pass");
    assert_eq!(
        verdicts(&done.trajectory),
        [pair("AgentResponseEvaluator", "pass"), pair("NetworkEventEvaluator", "pass")]
    );
    let network = &done.trajectory["score"]["evaluators"][1];
    assert!(network["expected"].as_str().unwrap().contains("__GITLAB__/-/profile"), "{network}");
    assert!(network["got"].as_str().unwrap().contains("\"response_status\":303"), "{network}");
    let post = entries(&done.trajectory)
        .iter()
        .find(|e| e["request"]["method"] == "POST" && e["request"]["url"] == format!("{base}/-/profile"))
        .expect("the bio's POST is in the trace");
    assert_eq!(post["response"]["status"], 303);
    assert!(post["request"]["postData"]["text"].as_str().unwrap().contains("bio=Kiwi+pies+since+2019."), "{post}");
    assert_eq!(bodies(&done.trajectory), 0, "no evaluator of task 1 reads a body: none is kept");

    // An agent that does nothing: the response passes, the trace has no such POST.
    let idle = run(dir.path(), &base, 2, "idle", "webarena-verified");
    assert_eq!(idle.record["outcome"], "failure", "{}", idle.record);
    assert_eq!(idle.record["failure_category"], "network_check");
    assert_eq!(
        verdicts(&idle.trajectory),
        [
            pair("AgentResponseEvaluator", "pass"),
            pair("NetworkEventEvaluator", "fail"),
            pair("NetworkEventEvaluator", "fail")
        ]
    );
    assert!(
        idle.trajectory["score"]["evaluators"][1]["got"].as_str().unwrap().contains("no matching network event"),
        "{}",
        idle.trajectory["score"]
    );
    assert!(!entries(&idle.trajectory).iter().any(|e| e["request"]["method"] == "POST"));
    assert!(bodies(&idle.trajectory) > 0, "task 2 reads a response's content: the documents' bodies are kept");

    // An agent that does the work and answers the wrong status.
    let wrong = run(dir.path(), &base, 1, "wrong", "webarena-verified");
    assert_eq!(wrong.record["outcome"], "failure", "{}", wrong.record);
    assert_eq!(wrong.record["failure_category"], "wrong_answer");
    assert_eq!(
        verdicts(&wrong.trajectory),
        [pair("AgentResponseEvaluator", "fail"), pair("NetworkEventEvaluator", "pass")]
    );

    // WebArena's own rules cannot score such a task: invalid, an error record, never a pass.
    let webarena = run(dir.path(), &base, 1, "right", "webarena");
    assert_eq!(webarena.record["outcome"], "error", "{}", webarena.record);
    assert_eq!(webarena.record["error"], "evaluator");
    assert!(webarena.record["success"].is_null());

    // A WebArena task under webarena-verified keeps WebArena's rules.
    let plain = run(dir.path(), &base, 3, "idle", "webarena-verified");
    assert_eq!(plain.record["outcome"], "success", "{}", plain.record);
    assert_eq!(verdicts(&plain.trajectory), [pair("url_match", "pass")]);
    drop(site);
}
