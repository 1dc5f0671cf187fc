//! The `cmd:<command line>` agent: an external process speaking the agent protocol (`docs/formats.md`, agent
//! protocol) over stdio.
//!
//! The command line is split like a POSIX shell would (quotes, escapes; no expansion) and started once per
//! attempt. The harness writes JSON lines to its stdin: one `task` message, then one `observation` per step.
//! The agent answers each observation with one `action` or `skill` line on stdout, optionally preceded by
//! `skill_report` lines for skills it ran itself. Its stderr is logged through tracing. Every reply has a
//! deadline; a line that is not such a message, a line over [`MAX_LINE_BYTES`], or the agent closing its
//! stdout is an [`AgentError`], which ends the attempt as `error` (`agent`). The child runs in its own process
//! group, which is killed when the agent is dropped, helpers it started included, and by a warden when the
//! worker is killed outright (`kill -9`): an agent that calls a paid model does not outlive its attempt. The
//! task that logs its stderr belongs to the agent's own [`TaskCenter`]; dropping the agent cancels it, after
//! it has logged what the agent wrote last (within [`STDERR_DRAIN`]).

use std::collections::BTreeMap;
use std::process::Stdio;
use std::time::Duration;

use futures::future::BoxFuture;
use serde::Deserialize;
use serde_json::json;
use skillshift_taskcenter::TaskCenter;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::process::{Child, ChildStdin, ChildStdout};

use crate::action::Action;
use crate::agent::{Agent, AgentError, Move, Observation, Reply, SkillReport, TaskBrief, Usage};
use crate::groups::Group;

/// The longest line accepted from the agent.
pub const MAX_LINE_BYTES: usize = 1 << 20;
/// How long the agent may take to answer one observation, unless set with [`CmdAgent::with_reply_timeout`].
pub const DEFAULT_REPLY_TIMEOUT: Duration = Duration::from_secs(300);
/// How long the stderr logger goes on, once the agent is dropped, logging what the agent wrote last.
pub const STDERR_DRAIN: Duration = Duration::from_secs(1);

pub struct CmdAgent {
    program: String,
    child: Child,
    /// The agent's process group (its pid): killed when the agent is dropped, by its warden when
    /// the worker is killed outright.
    group: Group,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
    reply_timeout: Duration,
    /// Lines read from stdout so far, for error messages.
    lines_read: u64,
    /// The owner of the stderr logger.
    tasks: TaskCenter,
}

/// A message from the agent.
#[derive(Debug, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum AgentLine {
    Action {
        action: String,
    },
    Skill {
        name: String,
        #[serde(default)]
        args: BTreeMap<String, serde_json::Value>,
    },
    SkillReport {
        name: String,
        ok: bool,
        #[serde(default)]
        error: Option<String>,
    },
}

impl CmdAgent {
    /// Starts `command_line` (split like a shell). Must be called inside a tokio runtime.
    pub fn spawn(command_line: &str) -> Result<CmdAgent, AgentError> {
        let argv = shlex::split(command_line)
            .ok_or_else(|| AgentError::Process(format!("cannot split the agent command line '{command_line}'")))?;
        let (program, args) =
            argv.split_first().ok_or_else(|| AgentError::Process("the agent command line is empty".into()))?;
        if tokio::runtime::Handle::try_current().is_err() {
            return Err(AgentError::Process("the cmd agent must be started inside a tokio runtime".into()));
        }
        let mut child = tokio::process::Command::new(program)
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            // Its own process group, so that what it starts can be killed with it (see `Drop`).
            .process_group(0)
            .spawn()
            .map_err(|e| AgentError::Process(format!("cannot start agent '{command_line}': {e}")))?;
        let missing = || AgentError::Process("the agent's stdio pipes were not created".into());
        let stdin = child.stdin.take().ok_or_else(missing)?;
        let stdout = child.stdout.take().ok_or_else(missing)?;
        let tasks = TaskCenter::new(format!("cmd agent {program}"));
        if let Some(stderr) = child.stderr.take() {
            let prog = program.clone();
            tasks.spawn("agent-stderr", move |token| async move {
                let log = |line: String| tracing::info!(agent = %prog, "agent stderr: {line}");
                let mut lines = BufReader::new(stderr).lines();
                loop {
                    tokio::select! {
                        line = lines.next_line() => match line {
                            Ok(Some(line)) => log(line),
                            _ => return,
                        },
                        _ = token.cancelled() => break,
                    }
                }
                // The agent was dropped and its process group killed: what it wrote last often says why.
                let rest = async {
                    while let Ok(Some(line)) = lines.next_line().await {
                        log(line);
                    }
                };
                let _ = tokio::time::timeout(STDERR_DRAIN, rest).await;
            });
        }
        let pid = child.id().unwrap_or(0);
        let group = Group::adopt(pid, "the agent");
        tracing::debug!(agent = %program, pid, "agent process started");
        Ok(CmdAgent {
            program: program.clone(),
            child,
            group,
            stdin,
            stdout: BufReader::new(stdout),
            reply_timeout: DEFAULT_REPLY_TIMEOUT,
            lines_read: 0,
            tasks,
        })
    }

    /// Sets the deadline for each reply (and for each message the agent must read).
    pub fn with_reply_timeout(mut self, timeout: Duration) -> CmdAgent {
        self.reply_timeout = timeout;
        self
    }

    /// The process id, while it runs.
    pub fn pid(&self) -> Option<u32> {
        self.child.id()
    }

    async fn send(&mut self, message: serde_json::Value) -> Result<(), AgentError> {
        let mut line = message.to_string();
        line.push('\n');
        let write = async {
            self.stdin.write_all(line.as_bytes()).await?;
            self.stdin.flush().await
        };
        match tokio::time::timeout(self.reply_timeout, write).await {
            Ok(Ok(())) => Ok(()),
            Ok(Err(e)) => Err(AgentError::Process(format!("cannot write to agent: {e}{}", self.exit_note()))),
            Err(_) => Err(AgentError::Process(format!("agent did not read its input within {:?}", self.reply_timeout))),
        }
    }

    /// Reads one line (without its newline) or says why there is none.
    async fn read_line(&mut self) -> Result<String, AgentError> {
        let mut buf = Vec::new();
        let limit = MAX_LINE_BYTES as u64 + 1;
        let n = (&mut self.stdout)
            .take(limit)
            .read_until(b'\n', &mut buf)
            .await
            .map_err(|e| AgentError::Process(format!("cannot read from agent: {e}")))?;
        if n == 0 {
            // Give a process that is exiting a moment to be reaped, so the message can say how it ended.
            let _ = tokio::time::timeout(Duration::from_millis(200), self.child.wait()).await;
            return Err(AgentError::Process(format!("agent closed its output{}", self.exit_note())));
        }
        self.lines_read += 1;
        if !buf.ends_with(b"\n") && buf.len() > MAX_LINE_BYTES {
            return Err(AgentError::Malformed(format!(
                "line {} of agent output is longer than {MAX_LINE_BYTES} bytes",
                self.lines_read
            )));
        }
        while buf.last().is_some_and(|b| *b == b'\n' || *b == b'\r') {
            buf.pop();
        }
        String::from_utf8(buf)
            .map_err(|_| AgentError::Malformed(format!("line {} of agent output is not utf-8", self.lines_read)))
    }

    async fn reply(&mut self) -> Result<Reply, AgentError> {
        let mut skill_reports = Vec::new();
        loop {
            let line = self.read_line().await?;
            if line.trim().is_empty() {
                continue;
            }
            let n = self.lines_read;
            let parsed: AgentLine = serde_json::from_str(&line).map_err(|e| {
                AgentError::Malformed(format!(
                    "line {n} of agent output is not a protocol message ({e}): {}",
                    cut(&line)
                ))
            })?;
            let mv = match parsed {
                AgentLine::SkillReport { name, ok, error } => {
                    skill_reports.push(SkillReport { name, ok, error });
                    continue;
                }
                // An action string WebArena cannot parse is a step with `last_action_error`, not an agent error.
                AgentLine::Action { action } => Move::Action(Action::parse_lenient(&action)),
                AgentLine::Skill { name, args } => {
                    if name.trim().is_empty() {
                        return Err(AgentError::Malformed(format!("line {n} of agent output: skill without a name")));
                    }
                    let args = args
                        .into_iter()
                        .map(|(k, v)| match v {
                            serde_json::Value::String(s) => Ok((k, s)),
                            serde_json::Value::Number(x) => Ok((k, x.to_string())),
                            serde_json::Value::Bool(b) => Ok((k, b.to_string())),
                            _ => Err(AgentError::Malformed(format!(
                                "line {n} of agent output: skill argument '{k}' must be a string"
                            ))),
                        })
                        .collect::<Result<_, _>>()?;
                    Move::Skill { name, args }
                }
            };
            return Ok(Reply { mv, skill_reports });
        }
    }

    /// ", exit status N" when the child has exited.
    fn exit_note(&mut self) -> String {
        match self.child.try_wait() {
            Ok(Some(status)) => format!(" ({status})"),
            _ => String::new(),
        }
    }
}

impl Agent for CmdAgent {
    fn start(&mut self, brief: TaskBrief) -> BoxFuture<'_, Result<(), AgentError>> {
        let skills: Vec<_> = brief
            .skills
            .iter()
            .map(|s| json!({"name": s.name, "params": s.params, "description": s.description}))
            .collect();
        let msg = json!({
            "type": "task",
            "uid": brief.uid,
            "intent": brief.intent,
            "start_url": brief.start_url,
            "max_steps": brief.max_steps,
            "skills": skills,
        });
        Box::pin(self.send(msg))
    }

    fn next(&mut self, obs: Observation) -> BoxFuture<'_, Result<Reply, AgentError>> {
        let msg = json!({
            "type": "observation",
            "step": obs.step,
            "url": obs.url,
            "title": obs.title,
            "axtree": obs.axtree,
            "last_action_error": obs.last_action_error,
        });
        Box::pin(async move {
            self.send(msg).await?;
            let timeout = self.reply_timeout;
            match tokio::time::timeout(timeout, self.reply()).await {
                Ok(r) => r,
                Err(_) => Err(AgentError::Process(format!(
                    "agent '{}' did not answer step {} within {timeout:?}",
                    self.program, obs.step
                ))),
            }
        })
    }

    fn usage(&self) -> Usage {
        // Opaque: the command may call a model of its own, so its cost is unknown, not $0.
        Usage { cost_usd: None, ..Usage::default() }
    }
}

impl Drop for CmdAgent {
    /// Kills the agent's whole process group, so helpers it started do not outlive the attempt, even
    /// when the agent itself has exited (its group is then what is left of it); the child itself is
    /// also killed and reaped by `kill_on_drop`.
    fn drop(&mut self) {
        // Before the stderr logger is cancelled, so its last read ends with the group's pipes.
        self.group.kill();
        self.tasks.cancel();
    }
}

fn cut(line: &str) -> String {
    match line.char_indices().nth(200) {
        Some((i, _)) => format!("{}...", &line[..i]),
        None => line.to_string(),
    }
}
