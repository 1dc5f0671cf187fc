//! The reference agent's prompt and the grammar of the replies it asks for.
//!
//! The prompt is WebArena's two-shot chain-of-thought prompt over the accessibility tree
//! (`p_cot_id_actree_2s`), trimmed to the actions skillshift executes (no tab actions, no homepage) and extended
//! with the previous action's error and, when the attempt has skills, the skill list and the skill syntax.
//! Its text is versioned by [`PROMPT_VERSION`]: change the version whenever the text changes, since the
//! prompt is part of what a run measures.
//!
//! A reply is parsed as WebArena does: the action is the fenced (```) block after "In summary, the next
//! action I will perform is" (see [`parse_reply`]). Besides WebArena's actions it may be a skill call,
//! `skill [name] [{"param": "value"}]`, which becomes [`Move::Skill`].

use std::collections::BTreeMap;

use crate::action::Action;
use crate::agent::{Move, Observation, SkillSummary, TaskBrief};

use super::llm::ChatMessage;

/// Names the prompt text below for people; the contract records [`template_digest`], which cannot drift.
pub const PROMPT_VERSION: &str = "webarena-cot-actree-2s+skills/1";

/// WebArena's phrase that introduces the action.
pub const ANSWER_PHRASE: &str = "In summary, the next action I will perform is";

/// The observation is cut to this many characters (about WebArena's 3,840 tokens at 4 characters a token).
pub const DEFAULT_MAX_OBS_CHARS: usize = 15_360;

const INTRO: &str = r#"You are an autonomous intelligent agent tasked with navigating a web browser. You will be given web-based tasks. These tasks will be accomplished through the use of specific actions you can issue.

Here's the information you'll have:
The user's objective: This is the task you're trying to complete.
The current web page's accessibility tree: This is a simplified representation of the webpage, providing key information.
The current web page's URL: This is the page you're currently navigating.
The previous action: This is the action you just performed. It may be helpful to track your progress.
The previous action's error: Present only when the previous action could not be performed.

The actions you can perform fall into several categories:

Page Operation Actions:
`click [id]`: This action clicks on an element with a specific id on the webpage.
`type [id] [content] [press_enter_after=0|1]`: Use this to type the content into the field with id. By default, the "Enter" key is pressed after typing unless press_enter_after is set to 0.
`hover [id]`: Hover over an element with id.
`press [key_comb]`:  Simulates the pressing of a key combination on the keyboard (e.g., Ctrl+v).
`scroll [direction=down|up]`: Scroll the page up or down.

URL Navigation Actions:
`goto [url]`: Navigate to a specific URL.
`go_back`: Navigate to the previously viewed page.
`go_forward`: Navigate to the next page (if a previous 'go_back' action was performed).

Completion Action:
`stop [answer]`: Issue this action when you believe the task is complete. If the objective is to find a text-based answer, provide the answer in the bracket. If you believe the task is impossible to complete, provide the answer as "N/A" in the bracket."#;

const SKILLS_INTRO: &str = r#"Skill Actions:
`skill [name] [{"parameter": "value", ...}]`: Run one of the skills listed below as a single action. Give every parameter the skill lists, as a JSON object of strings. A skill performs several page operations for you; if any of them cannot be performed, the skill fails and the next observation shows the error.

Available skills:"#;

const RULES: &str = r#"To be successful, it is very important to follow the following rules:
1. You should only issue an action that is valid given the current observation
2. You should only issue one action at a time.
3. You should follow the examples to reason step by step and then issue the next action.
4. Generate the action in the correct format. Start with a "In summary, the next action I will perform is" phrase, followed by action inside ``````. For example, "In summary, the next action I will perform is ```click [1234]```".
5. Issue stop action when you think you have achieved the objective. Don't generate anything after stop."#;

const EXAMPLES: [(&str, &str); 2] = [
    (
        "OBSERVATION:\n[1744] link 'HP CB782A#ABA 640 Inkjet Fax Machine (Renewed)'\n\t\t[1749] StaticText '$279.49'\n\t\t[1757] button 'Add to Cart'\n\t\t[1760] button 'Add to Wish List'\n\t\t[1761] button 'Add to Compare'\nURL: http://onestopmarket.com/office-products/office-electronics.html\nOBJECTIVE: What is the price of HP Inkjet Fax Machine\nPREVIOUS ACTION: None",
        "Let's think step-by-step. This page list the information of HP Inkjet Fax Machine, which is the product identified in the objective. Its price is $279.49. I think I have achieved the objective. I will issue the stop action with the answer. In summary, the next action I will perform is ```stop [$279.49]```",
    ),
    (
        "OBSERVATION:\n[164] textbox 'Search' focused: True required: False\n[171] button 'Go'\n[174] link 'Find directions between two points'\n[212] heading 'Search Results'\n[216] button 'Close'\nURL: http://openstreetmap.org\nOBJECTIVE: Show me the restaurants near CMU\nPREVIOUS ACTION: None",
        "Let's think step-by-step. This page has a search box whose ID is [164]. According to the nominatim rule of openstreetmap, I can search for the restaurants near a location by \"restaurants near\". I can submit my typing by pressing the Enter afterwards. In summary, the next action I will perform is ```type [164] [restaurants near CMU] [1]```",
    ),
];

/// The prompt version a contract records: `sha256:` over the prompt template as the agent builds it, i.e.
/// the messages of one step (with and without a skill, and with a previous error) and the correction, each
/// rendered from fixed placeholders. Any change to the text or to how it is put together changes it.
pub fn template_digest() -> String {
    use sha2::{Digest, Sha256};
    let skill =
        SkillSummary { name: "{name}".into(), params: vec!["{param}".into()], description: "{description}".into() };
    let brief = |skills: Vec<SkillSummary>| TaskBrief {
        uid: "{uid}".into(),
        intent: "{objective}".into(),
        start_url: "{start_url}".into(),
        max_steps: 1,
        skills,
    };
    let obs = Observation {
        step: 0,
        url: "{url}".into(),
        title: "{title}".into(),
        axtree: "{observation}".into(),
        last_action_error: None,
    };
    let mut h = Sha256::new();
    let renders = [
        messages(&brief(Vec::new()), &obs, None, None, DEFAULT_MAX_OBS_CHARS),
        messages(&brief(vec![skill]), &obs, Some("{previous_action}"), Some("{error}"), DEFAULT_MAX_OBS_CHARS),
        correction("{reply}", &ReplyError::NoAction).to_vec(),
    ];
    for m in renders.iter().flatten() {
        h.update(m.role.as_bytes());
        h.update([0]);
        h.update(m.content.as_bytes());
        h.update([0]);
    }
    format!("sha256:{}", hex::encode(h.finalize()))
}

/// The system message: WebArena's instructions, the skills when there are any, the rules.
pub fn system_prompt(skills: &[SkillSummary]) -> String {
    let mut s = String::from(INTRO);
    if !skills.is_empty() {
        s.push_str("\n\n");
        s.push_str(SKILLS_INTRO);
        for k in skills {
            s.push_str(&format!("\n- {}({}): {}", k.name, k.params.join(", "), k.description));
        }
    }
    s.push_str("\n\n");
    s.push_str(RULES);
    s
}

/// The messages for one step: system, the two worked examples, then this step's observation.
pub fn messages(
    brief: &TaskBrief,
    obs: &Observation,
    previous_action: Option<&str>,
    previous_error: Option<&str>,
    max_obs_chars: usize,
) -> Vec<ChatMessage> {
    let mut out = vec![ChatMessage::system(system_prompt(&brief.skills))];
    for (user, assistant) in EXAMPLES {
        out.push(ChatMessage::user(user));
        out.push(ChatMessage::assistant(assistant));
    }
    let mut text = format!(
        "OBSERVATION:\n{}\nURL: {}\nOBJECTIVE: {}\nPREVIOUS ACTION: {}",
        truncate_lines(obs.axtree.trim_end(), max_obs_chars),
        obs.url,
        brief.intent,
        previous_action.unwrap_or("None"),
    );
    if let Some(err) = previous_error {
        text.push_str(&format!("\nPREVIOUS ACTION ERROR: {err}"));
    }
    out.push(ChatMessage::user(text));
    out
}

/// The two messages that ask again after an unparseable reply.
pub fn correction(reply: &str, error: &ReplyError) -> [ChatMessage; 2] {
    [
        ChatMessage::assistant(reply),
        ChatMessage::user(format!(
            "Your reply could not be used: {error}. Reply again, and end with \"{ANSWER_PHRASE} ```<action>```\" \
             where <action> is exactly one action in the syntax given above."
        )),
    ]
}

/// Cuts `text` at a line boundary so it holds at most `max` characters, saying so when it cut.
fn truncate_lines(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        return text.to_string();
    }
    let mut out = String::new();
    let mut used = 0;
    for line in text.lines() {
        let n = line.chars().count() + 1;
        if used + n > max {
            break;
        }
        out.push_str(line);
        out.push('\n');
        used += n;
    }
    out.push_str("[... the rest of the page is cut ...]");
    out
}

/// Why a reply holds no usable move.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ReplyError {
    #[error("no action found: expected \"{ANSWER_PHRASE} ```<action>```\"")]
    NoAction,
    #[error("{0}")]
    Action(#[from] crate::action::ParseActionError),
    #[error("bad skill call '{text}': {reason}")]
    Skill { text: String, reason: String },
}

/// Extracts the move from a model's reply.
///
/// The action is the first fenced block after the last [`ANSWER_PHRASE`]; without the phrase, the last fenced
/// block of the reply; with the phrase but no fence, the rest of its line (backticks and a final period
/// stripped). A fence's language tag line (```` ```text ````) is ignored. The action is one of WebArena's or
/// `skill [name] [{"param": "value"}]`, whose name and parameters must match one of `skills`.
pub fn parse_reply(reply: &str, skills: &[SkillSummary]) -> Result<Move, ReplyError> {
    let text = extract_action_text(reply).ok_or(ReplyError::NoAction)?;
    if text == "skill" || text.starts_with("skill ") || text.starts_with("skill[") {
        return parse_skill(&text, skills);
    }
    Ok(Move::Action(Action::parse(&text)?))
}

fn extract_action_text(reply: &str) -> Option<String> {
    let lower = reply.to_ascii_lowercase();
    let after_phrase = lower.rfind(&ANSWER_PHRASE.to_ascii_lowercase()).map(|i| &reply[i + ANSWER_PHRASE.len()..]);
    let fenced = match after_phrase {
        Some(rest) => fences(rest).into_iter().next(),
        None => fences(reply).pop(),
    };
    let raw = match (fenced, after_phrase) {
        (Some(block), _) => strip_language_tag(block),
        (None, Some(rest)) => {
            let line = rest.trim_start_matches([':', ' ']).lines().next().unwrap_or("");
            line.trim().trim_end_matches('.').trim_matches('`').trim()
        }
        (None, None) => return None,
    };
    let raw = raw.trim();
    (!raw.is_empty()).then(|| raw.to_string())
}

/// The contents of the complete ``` ... ``` blocks of `s`, in order.
fn fences(s: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut rest = s;
    while let Some(open) = rest.find("```") {
        let body = &rest[open + 3..];
        match body.find("```") {
            Some(close) => {
                out.push(&body[..close]);
                rest = &body[close + 3..];
            }
            None => break,
        }
    }
    out
}

/// Drops a first line that is only a language tag (`text`, `bash`), keeping one-word actions such as `go_back`.
fn strip_language_tag(block: &str) -> &str {
    let block = block.trim_matches([' ', '\t']);
    if let Some((first, rest)) = block.split_once('\n') {
        let tag = first.trim();
        let is_tag = !tag.is_empty()
            && tag.chars().all(|c| c.is_ascii_alphanumeric())
            && !matches!(tag, "stop" | "skill" | "go_back" | "go_forward")
            && !rest.trim().is_empty();
        if is_tag {
            return rest;
        }
    }
    block
}

fn parse_skill(text: &str, skills: &[SkillSummary]) -> Result<Move, ReplyError> {
    let err = |reason: String| ReplyError::Skill { text: text.to_string(), reason };
    let rest = text["skill".len()..].trim_start();
    let inner = rest.strip_prefix('[').ok_or_else(|| err("expected skill [name] [{...}]".into()))?;
    let close = inner.find(']').ok_or_else(|| err("unclosed '[' after skill".into()))?;
    let name = inner[..close].trim();
    let tail = inner[close + 1..].trim();
    let args: BTreeMap<String, String> = if tail.is_empty() {
        BTreeMap::new()
    } else {
        let json = tail
            .strip_prefix('[')
            .and_then(|t| t.strip_suffix(']'))
            .ok_or_else(|| err("the arguments must be one bracketed JSON object".into()))?;
        let value: serde_json::Value =
            serde_json::from_str(json.trim()).map_err(|e| err(format!("the arguments are not JSON: {e}")))?;
        let obj = value.as_object().ok_or_else(|| err("the arguments must be a JSON object".into()))?;
        obj.iter()
            .map(|(k, v)| match v {
                serde_json::Value::String(s) => Ok((k.clone(), s.clone())),
                serde_json::Value::Number(n) => Ok((k.clone(), n.to_string())),
                serde_json::Value::Bool(b) => Ok((k.clone(), b.to_string())),
                _ => Err(err(format!("argument '{k}' must be a string"))),
            })
            .collect::<Result<_, _>>()?
    };
    let known = || skills.iter().map(|s| s.name.as_str()).collect::<Vec<_>>().join(", ");
    let skill = skills.iter().find(|s| s.name == name).ok_or_else(|| {
        if skills.is_empty() {
            err("this task has no skills".into())
        } else {
            err(format!("unknown skill '{name}' (available: {})", known()))
        }
    })?;
    if let Some(missing) = skill.params.iter().find(|p| !args.contains_key(*p)) {
        return Err(err(format!("missing parameter '{missing}' (needs: {})", skill.params.join(", "))));
    }
    if let Some(extra) = args.keys().find(|k| !skill.params.contains(k)) {
        return Err(err(format!("unknown parameter '{extra}' (needs: {})", skill.params.join(", "))));
    }
    Ok(Move::Skill { name: name.to_string(), args })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn skills() -> Vec<SkillSummary> {
        vec![SkillSummary {
            name: "create_issue".into(),
            params: vec!["project".into(), "title".into()],
            description: "Open a new issue in a project".into(),
        }]
    }

    fn act(reply: &str) -> Action {
        match parse_reply(reply, &[]) {
            Ok(Move::Action(a)) => a,
            other => panic!("{reply:?} gave {other:?}"),
        }
    }

    #[test]
    fn parses_webarena_replies() {
        assert_eq!(act(EXAMPLES[0].1), Action::Stop { answer: "$279.49".into() });
        assert_eq!(act(EXAMPLES[1].1), Action::Type { id: 164, text: "restaurants near CMU".into(), enter: true });
        // Reasoning with a fence of its own before the phrase: the block after the phrase wins.
        let r = "The tree shows ```[3] link 'Home'```. In summary, the next action I will perform is ```click [3]```";
        assert_eq!(act(r), Action::Click { id: 3 });
        // A language tag line and surrounding newlines.
        assert_eq!(act("In summary, the next action I will perform is\n```text\ngo_back\n```"), Action::GoBack);
        assert_eq!(act("In summary, the next action I will perform is ```\ngo_back\n```"), Action::GoBack);
        // No phrase: the last fenced block. Phrase without a fence: the rest of the line.
        assert_eq!(act("```click [1]``` then ```click [2]```"), Action::Click { id: 2 });
        assert_eq!(
            act("in summary, the next action i will perform is `scroll [down]`."),
            Action::Scroll { down: true }
        );
        let multi = "In summary, the next action I will perform is ```stop [line one\nline two]```";
        assert_eq!(act(multi), Action::Stop { answer: "line one\nline two".into() });
        // An unclosed fence (a reply cut at the closing backticks) still names its action.
        assert_eq!(act("In summary, the next action I will perform is ```click [1]"), Action::Click { id: 1 });
    }

    #[test]
    fn rejects_replies_without_a_valid_action() {
        for bad in [
            "",
            "I am not sure what to do.",
            "In summary, the next action I will perform is",
            "In summary, the next action I will perform is ```jump [3]```",
            "In summary, the next action I will perform is ```click [abc]```",
            "In summary, the next action I will perform is ```click [1",
        ] {
            assert!(parse_reply(bad, &[]).is_err(), "{bad:?} should not parse");
        }
        assert_eq!(parse_reply("nothing here", &[]), Err(ReplyError::NoAction));
    }

    #[test]
    fn parses_skill_calls_against_the_skill_list() {
        let r = r#"In summary, the next action I will perform is ```skill [create_issue] [{"project": "a/b", "title": "Fix [it]"}]```"#;
        let args = BTreeMap::from([("project".to_string(), "a/b".to_string()), ("title".into(), "Fix [it]".into())]);
        assert_eq!(parse_reply(r, &skills()), Ok(Move::Skill { name: "create_issue".into(), args }));
        let bad = |call: &str| {
            let reply = format!("{ANSWER_PHRASE} ```{call}```");
            match parse_reply(&reply, &skills()) {
                Err(ReplyError::Skill { reason, .. }) => reason,
                other => panic!("{call} gave {other:?}"),
            }
        };
        assert!(bad(r#"skill [nope] [{"project": "x"}]"#).contains("unknown skill 'nope'"));
        assert!(bad(r#"skill [create_issue] [{"project": "x"}]"#).contains("missing parameter 'title'"));
        assert!(bad(r#"skill [create_issue] [{"project": "x", "title": "t", "z": "1"}]"#).contains("unknown parameter"));
        assert!(bad("skill [create_issue] [not json]").contains("not JSON"));
        assert!(bad(r#"skill [create_issue] [["a"]]"#).contains("JSON object"));
        assert!(bad("skill create_issue").contains("expected skill [name]"));
        let none = parse_reply(&format!("{ANSWER_PHRASE} ```skill [x]```"), &[]);
        assert!(matches!(none, Err(ReplyError::Skill { reason, .. }) if reason.contains("no skills")));
    }

    #[test]
    fn prompt_holds_objective_url_tree_previous_action_error_and_skills() {
        let brief = TaskBrief {
            uid: "skillshift.gitlab.v1.0".into(),
            intent: "Open the issue 'Crash on save'".into(),
            start_url: "http://h/".into(),
            max_steps: 10,
            skills: skills(),
        };
        let obs = Observation {
            step: 1,
            url: "http://h/issues".into(),
            title: "Issues".into(),
            axtree: "Tab 0 (current): Issues\n\n[1] RootWebArea 'Issues'\n\t[7] link 'Crash on save'".into(),
            last_action_error: None,
        };
        let msgs = messages(&brief, &obs, Some("click [4]"), Some("no element with id 4"), DEFAULT_MAX_OBS_CHARS);
        assert_eq!(msgs.len(), 6);
        assert!(msgs[0].content.contains("- create_issue(project, title): Open a new issue in a project"));
        assert!(msgs[0].content.contains("`skill [name]"));
        let last = &msgs[5].content;
        assert!(last.contains("[7] link 'Crash on save'"));
        assert!(last.contains("URL: http://h/issues"));
        assert!(last.contains("OBJECTIVE: Open the issue 'Crash on save'"));
        assert!(last.contains("PREVIOUS ACTION: click [4]\nPREVIOUS ACTION ERROR: no element with id 4"));

        let plain = TaskBrief { skills: vec![], ..brief };
        let msgs = messages(&plain, &obs, None, None, 40);
        assert!(!msgs[0].content.contains("skill ["));
        assert!(msgs[5].content.contains("PREVIOUS ACTION: None"));
        assert!(!msgs[5].content.contains("ERROR"));
        assert!(msgs[5].content.contains("[... the rest of the page is cut ...]"));
        assert!(!msgs[5].content.contains("Crash on save'\nURL"));
    }
}
