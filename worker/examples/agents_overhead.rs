//! Measures what the agents add to a step, apart from the model itself, on an observation of about 400
//! elements: building the reference prompt, parsing a reply, a reference-agent step against the scripted test
//! LLM on loopback (HTTP, JSON, accounting; a stand-in, so no model time), and a `cmd:` round trip through the
//! Python example agent.
//!
//! `cargo run --release -p skillshift-worker --example agents_overhead [-- STEPS]` (default 300 steps each).

use std::time::{Duration, Instant};

use skillshift_worker::agent::{Agent, Observation, TaskBrief};
use skillshift_worker::agents::cmd::CmdAgent;
use skillshift_worker::agents::llm::LlmConfig;
use skillshift_worker::agents::prompt::{self, DEFAULT_MAX_OBS_CHARS};
use skillshift_worker::agents::reference::ReferenceAgent;
use skillshift_worker::agents::scripted_llm::{Scripted, ScriptedLlm, SCRIPTED_MODEL};

fn tree(elements: usize) -> String {
    let roles = ["link", "button", "StaticText", "textbox", "heading", "checkbox"];
    let mut s = String::from(
        "Tab 0 (current): Issues · a / b · GitLab\n\n[1] RootWebArea 'Issues · a / b · GitLab' focused: True\n",
    );
    for i in 0..elements {
        let depth = 1 + i % 4;
        let role = roles[i % roles.len()];
        s.push_str(&format!("{}[{}] {role} 'Element number {i} of the issue list'\n", "\t".repeat(depth), i + 2));
    }
    s
}

fn brief() -> TaskBrief {
    TaskBrief {
        uid: "skillshift.gitlab.v1.0".into(),
        intent: "Open the issue \"Element number 399 of the issue list\"".into(),
        start_url: "http://gitlab.test/".into(),
        max_steps: u32::MAX,
        skills: vec![],
    }
}

fn obs(step: u32, axtree: &str) -> Observation {
    Observation {
        step,
        url: "http://gitlab.test/a/b/-/issues".into(),
        title: "Issues".into(),
        axtree: axtree.to_string(),
        last_action_error: None,
    }
}

fn summary(name: &str, mut samples: Vec<Duration>) -> String {
    samples.sort();
    let q = |p: f64| samples[((samples.len() - 1) as f64 * p).round() as usize];
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    format!("| {name} | {} | {:.3} | {:.3} |", samples.len(), ms(q(0.5)), ms(q(0.9)))
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let steps: usize = std::env::args().nth(1).map(|s| s.parse()).transpose()?.unwrap_or(300);
    let axtree = tree(400);
    let brief = brief();
    let mut rows = Vec::new();

    let mut t = Vec::new();
    for i in 0..steps {
        let start = Instant::now();
        let m = prompt::messages(&brief, &obs(i as u32, &axtree), Some("click [12]"), None, DEFAULT_MAX_OBS_CHARS);
        t.push(start.elapsed());
        std::hint::black_box(m);
    }
    rows.push(summary("reference prompt build", t));

    let reply = "Let's think step-by-step. The issue is listed with id [401]. In summary, the next action I will \
                 perform is ```click [401]```";
    let mut t = Vec::new();
    for _ in 0..steps {
        let start = Instant::now();
        let mv = prompt::parse_reply(reply, &[])?;
        t.push(start.elapsed());
        std::hint::black_box(mv);
    }
    rows.push(summary("reply parse", t));

    let server = ScriptedLlm::start(vec![Scripted::action("click [401]"); steps + 1]).await?;
    let mut agent = ReferenceAgent::new(LlmConfig::new(&server.base_url(), SCRIPTED_MODEL))?;
    agent.start(brief.clone()).await?;
    agent.next(obs(0, &axtree)).await?; // warm the connection
    let mut t = Vec::new();
    for i in 0..steps {
        let start = Instant::now();
        agent.next(obs(i as u32 + 1, &axtree)).await?;
        t.push(start.elapsed());
    }
    rows.push(summary("reference step, scripted LLM on loopback", t));

    let script = format!("python3 {}/../examples/agent.py", env!("CARGO_MANIFEST_DIR"));
    let mut agent = CmdAgent::spawn(&script)?;
    agent.start(brief.clone()).await?;
    let mut t = Vec::new();
    for i in 0..steps {
        let start = Instant::now();
        agent.next(obs(i as u32, &axtree)).await?;
        t.push(start.elapsed());
    }
    rows.push(summary("cmd step, python3 examples/agent.py", t));

    println!("observation: 400 elements, {} bytes\n", axtree.len());
    println!("| measure | n | median ms | p90 ms |\n| --- | --- | --- | --- |");
    for r in rows {
        println!("{r}");
    }
    Ok(())
}
