//! The `cmd:` agent against real child processes: the Python example agent, and children that misbehave
//! (non-JSON output, bad actions, early exit, hanging).
#![allow(clippy::unwrap_used)] // a test crate: a failed unwrap is a failed test

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use skillshift_worker::action::Action;
use skillshift_worker::agent::{Agent, AgentError, Move, Observation, SkillReport, SkillSummary, TaskBrief};
use skillshift_worker::agents::cmd::CmdAgent;

#[path = "../../tests/support/procs.rs"]
mod procs;
use procs::{gone_within, processes_running, unique_seconds};

fn example_agent() -> String {
    format!("python3 {}/../examples/agent.py", env!("CARGO_MANIFEST_DIR"))
}

fn brief(intent: &str) -> TaskBrief {
    TaskBrief {
        uid: "skillshift.gitlab.v1.3".into(),
        intent: intent.into(),
        start_url: "http://gitlab.test/".into(),
        max_steps: 10,
        skills: vec![SkillSummary {
            name: "create_issue".into(),
            params: vec!["project".into(), "title".into()],
            description: "Open a new issue".into(),
        }],
    }
}

fn obs(step: u32, tree: &str) -> Observation {
    Observation {
        step,
        url: format!("http://gitlab.test/page{step}"),
        title: format!("Page {step}"),
        axtree: format!("Tab 0 (current): Page {step}\n\n[1] RootWebArea 'Page {step}'\n{tree}"),
        last_action_error: None,
    }
}

fn sh(script: &str) -> String {
    format!("sh -c '{script}'")
}

#[tokio::test]
async fn the_python_example_agent_searches_clicks_and_stops() {
    let mut agent = CmdAgent::spawn(&example_agent()).unwrap().with_reply_timeout(Duration::from_secs(20));
    agent.start(brief("Search for \"skill drift\" and open the issue \"Crash on save\"")).await.unwrap();
    let steps = [
        "\t[4] link 'Projects'\n\t[5] searchbox 'Search GitLab'\n\t[6] button 'Sign out'",
        "\t[8] heading 'Search results'\n\t[9] link 'Crash on save'\n\t[10] link 'Other issue'",
        "\t[12] heading 'Crash on save'\n\t[13] StaticText 'Opened by root'",
    ];
    let mut moves = Vec::new();
    for (i, tree) in steps.iter().enumerate() {
        moves.push(agent.next(obs(i as u32, tree)).await.unwrap().mv);
    }
    assert_eq!(
        moves,
        vec![
            Move::Action(Action::Type { id: 5, text: "skill drift".into(), enter: true }),
            Move::Action(Action::Click { id: 9 }),
            Move::Action(Action::Stop { answer: String::new() }),
        ]
    );
    assert_eq!(agent.usage().llm_calls, 0);
}

#[tokio::test]
async fn the_python_example_agent_answers_a_question_from_the_page() {
    let mut agent = CmdAgent::spawn(&example_agent()).unwrap();
    agent.start(brief("What is the title of the issue \"Crash on save\"?")).await.unwrap();
    let first = agent.next(obs(0, "\t[9] link 'Crash on save'")).await.unwrap().mv;
    assert_eq!(first, Move::Action(Action::Click { id: 9 }));
    let second = agent.next(obs(1, "\t[12] heading 'Crash on save'")).await.unwrap().mv;
    assert_eq!(second, Move::Action(Action::Stop { answer: "Crash on save".into() }));
}

#[tokio::test]
async fn the_child_receives_the_protocol_messages() {
    // The child echoes both lines it read back as the answer of a stop action.
    let echo = r#"import json,sys
t=sys.stdin.readline(); o=sys.stdin.readline()
print(json.dumps({"type":"action","action":"stop [%s]" % json.dumps([json.loads(t),json.loads(o)])}), flush=True)
sys.stdin.read()"#;
    let mut agent = CmdAgent::spawn(&format!("python3 -c '{echo}'")).unwrap();
    agent.start(brief("Open it")).await.unwrap();
    let mut o = obs(0, "\t[2] link 'A'");
    o.last_action_error = Some("nothing to click".into());
    let Move::Action(Action::Stop { answer }) = agent.next(o).await.unwrap().mv else { panic!("expected stop") };
    let got: serde_json::Value = serde_json::from_str(&answer).unwrap();
    assert_eq!(
        got[0],
        serde_json::json!({"type": "task", "uid": "skillshift.gitlab.v1.3", "intent": "Open it",
            "start_url": "http://gitlab.test/", "max_steps": 10,
            "skills": [{"name": "create_issue", "params": ["project", "title"], "description": "Open a new issue"}]})
    );
    assert_eq!(
        got[1],
        serde_json::json!({"type": "observation", "step": 0, "url": "http://gitlab.test/page0", "title": "Page 0",
            "axtree": "Tab 0 (current): Page 0\n\n[1] RootWebArea 'Page 0'\n\t[2] link 'A'",
            "last_action_error": "nothing to click"})
    );
}

#[tokio::test]
async fn skill_calls_and_skill_reports_are_returned() {
    let script = r#"read t; read o
echo "{\"type\":\"skill_report\",\"name\":\"login\",\"ok\":true,\"error\":null}"
echo
echo "{\"type\":\"skill_report\",\"name\":\"search\",\"ok\":false,\"error\":\"no box\"}"
echo "{\"type\":\"skill\",\"name\":\"create_issue\",\"args\":{\"project\":\"a/b\",\"title\":\"t\"}}"
read o
echo "{\"type\":\"action\",\"action\":\"go_back\"}"
cat >/dev/null"#;
    let mut agent = CmdAgent::spawn(&sh(script)).unwrap();
    agent.start(brief("x")).await.unwrap();
    let first = agent.next(obs(0, "")).await.unwrap();
    let args = BTreeMap::from([("project".to_string(), "a/b".to_string()), ("title".into(), "t".into())]);
    assert_eq!(first.mv, Move::Skill { name: "create_issue".into(), args });
    assert_eq!(
        first.skill_reports,
        vec![
            SkillReport { name: "login".into(), ok: true, error: None },
            SkillReport { name: "search".into(), ok: false, error: Some("no box".into()) },
        ]
    );
    let second = agent.next(obs(1, "")).await.unwrap();
    assert_eq!(second.mv, Move::Action(Action::GoBack));
    assert!(second.skill_reports.is_empty());
}

#[tokio::test]
async fn an_action_webarena_cannot_parse_is_a_move_not_an_agent_error() {
    let mut agent = CmdAgent::spawn(&sh(r#"echo {\"type\":\"action\",\"action\":\"fly [3]\"}; sleep 5"#))
        .unwrap()
        .with_reply_timeout(Duration::from_secs(10));
    agent.start(brief("x")).await.unwrap();
    let reply = agent.next(obs(0, "")).await.unwrap();
    assert_eq!(
        reply.mv,
        Move::Action(Action::Invalid { text: "fly [3]".into(), reason: "unknown action 'fly'".into() })
    );
}

async fn first_error(command: &str) -> AgentError {
    let mut agent = CmdAgent::spawn(command).unwrap().with_reply_timeout(Duration::from_secs(10));
    agent.start(brief("x")).await.unwrap();
    agent.next(obs(0, "")).await.unwrap_err()
}

#[tokio::test]
async fn a_non_json_line_is_malformed() {
    let err = first_error(&sh("echo not-json; sleep 5")).await;
    assert!(matches!(&err, AgentError::Malformed(m) if m.contains("line 1") && m.contains("not-json")), "{err}");
}

#[tokio::test]
async fn bad_messages_are_malformed() {
    for line in [
        r#"{\"type\":\"action\"}"#,
        r#"{\"type\":\"dance\"}"#,
        r#"{\"type\":\"skill\",\"name\":\"s\",\"args\":{\"a\":[1]}}"#,
        r#"[1,2]"#,
    ] {
        let err = first_error(&sh(&format!("echo \"{line}\"; sleep 5"))).await;
        assert!(matches!(err, AgentError::Malformed(_)), "{line}: {err}");
    }
}

#[tokio::test]
async fn an_agent_that_exits_is_a_process_error() {
    // It reads the task and the first observation, so the exit comes when a reply is awaited, never
    // while the observation is still being written (that is a broken pipe, another error).
    let err = first_error(&sh("read t; read o; exit 3")).await;
    assert!(matches!(&err, AgentError::Process(m) if m.contains("closed its output")), "{err}");
}

#[tokio::test]
async fn a_hung_agent_hits_the_reply_deadline() {
    let mut agent = CmdAgent::spawn("sleep 30").unwrap().with_reply_timeout(Duration::from_millis(300));
    agent.start(brief("x")).await.unwrap();
    let t0 = Instant::now();
    let err = agent.next(obs(0, "")).await.unwrap_err();
    assert!(matches!(&err, AgentError::Process(m) if m.contains("did not answer step 0")), "{err}");
    assert!(t0.elapsed() < Duration::from_secs(10));
}

#[tokio::test]
async fn the_child_is_killed_on_drop() {
    let agent = CmdAgent::spawn("sleep 30").unwrap();
    let pid = agent.pid().unwrap();
    assert!(std::path::Path::new(&format!("/proc/{pid}")).exists());
    drop(agent);
    wait_dead(pid).await;
}

/// Waits until `pid` is gone or a zombie.
async fn wait_dead(pid: u32) {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
        if stat.is_empty() || stat.contains(") Z ") {
            return;
        }
        assert!(Instant::now() < deadline, "process {pid} still running: {stat}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test]
async fn processes_the_agent_started_are_killed_with_it() {
    // The agent starts a helper and answers with the helper's pid.
    let script = r#"read t; read o; sleep 31 & echo "{\"type\":\"action\",\"action\":\"stop [$!]\"}"; wait"#;
    let mut agent = CmdAgent::spawn(&sh(script)).unwrap();
    agent.start(brief("x")).await.unwrap();
    let Move::Action(Action::Stop { answer }) = agent.next(obs(0, "")).await.unwrap().mv else { panic!("stop") };
    let helper: u32 = answer.parse().unwrap();
    assert!(std::path::Path::new(&format!("/proc/{helper}")).exists());
    drop(agent);
    wait_dead(helper).await;
}

#[tokio::test]
async fn bad_command_lines_are_process_errors() {
    for bad in ["", "   ", "'unclosed", "/nonexistent/agent --x"] {
        assert!(matches!(CmdAgent::spawn(bad), Err(AgentError::Process(_))), "{bad:?}");
    }
}

/// An agent that exits by itself (an `agent` error) leaves no helper behind: dropping it kills what
/// is left of its process group though the agent itself is already reaped, in a worker that goes
/// on running (so no warden fires).
#[tokio::test]
async fn an_agent_that_exits_leaves_no_helper_behind() {
    let seconds = unique_seconds();
    // The helper lets go of the agent's pipes, so the harness sees the agent's stdout close.
    let script = format!("sleep {seconds} </dev/null >/dev/null 2>&1 & read t; read o; exit 3");
    let mut agent = CmdAgent::spawn(&sh(&script)).unwrap().with_reply_timeout(Duration::from_secs(20));
    agent.start(brief("Anything")).await.unwrap();
    assert!(agent.next(obs(0, "")).await.is_err(), "the agent exited without a reply");
    let helper = processes_running(&["sleep", &seconds]);
    assert_eq!(helper.len(), 1, "the agent's helper runs: {helper:?}");
    drop(agent);
    // The group is signalled in the drop itself: nothing on this runtime need run while this waits.
    assert!(
        gone_within(helper[0], &["sleep", &seconds], Duration::from_secs(15)),
        "the helper (pid {}, sleep {seconds}) outlived its agent",
        helper[0]
    );
}
