//! Property-based fuzzing (proptest) of every reader of outside input, bounded
//! in case count so it runs in every CI build (`PROPTEST_CASES` raises it for a
//! longer run): the records reader, the task loader, the skill library, the
//! action parser and the wire conversions. Each must answer any input with a
//! value or an error, never a panic, and what it accepts must survive its own
//! round trip.

use std::collections::BTreeMap;
use std::io::Cursor;
use std::path::Path;

use proptest::prelude::*;
use serde_json::{json, Value};
use skillshift_analysis::records;
use skillshift_common::ids::AttemptKey;
use skillshift_common::skills::{placeholders, SkillLibrary};
use skillshift_common::task;
use skillshift_common::Record;
use skillshift_proto::convert;
use skillshift_proto::v1;
use skillshift_worker::action::Action;

/// Cases per property unless `PROPTEST_CASES` says otherwise.
fn config() -> ProptestConfig {
    let cases = std::env::var("PROPTEST_CASES").ok().and_then(|v| v.parse().ok()).unwrap_or(96);
    ProptestConfig { cases, failure_persistence: None, ..ProptestConfig::default() }
}

/// Any JSON value, a few levels deep.
fn json_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        any::<u32>().prop_map(Value::from),
        (-1e12f64..1e12).prop_map(Value::from),
        ".{0,16}".prop_map(Value::from),
        "\\{\\{[a-z]{0,4}(\\}\\})?".prop_map(Value::from),
    ];
    leaf.prop_recursive(3, 24, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            prop::collection::btree_map("[a-z_]{1,10}", inner, 0..4)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

/// A well-formed record line's fields, each kept, dropped or replaced by any value.
fn record_object() -> impl Strategy<Value = Value> {
    let valid = json!({
        "uid": "skillshift.gitlab.v1.3", "site": "gitlab", "condition": "src", "success": true, "steps": 3,
        "skill_calls": 1, "skill_failures": 0, "outcome": "success", "treatment": "T", "rep": 0, "attempt": 0,
        "sweep": "sw-1", "duration_ms": 1200, "llm_calls": 3, "tokens_in": 100, "tokens_out": 10, "cost_usd": 0.001,
    });
    let fields: Vec<(String, Value)> =
        valid.as_object().into_iter().flatten().map(|(k, v)| (k.clone(), v.clone())).collect();
    let n = fields.len();
    (prop::collection::vec(0u8..6, n), prop::collection::vec(json_value(), n)).prop_map(move |(how, values)| {
        let mut out = serde_json::Map::new();
        for (((k, v), h), other) in fields.iter().zip(how).zip(values) {
            match h {
                0 => {}
                1 => {
                    out.insert(k.clone(), other);
                }
                _ => {
                    out.insert(k.clone(), v.clone());
                }
            }
        }
        Value::Object(out)
    })
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn the_records_reader_answers_any_bytes(bytes in prop::collection::vec(any::<u8>(), 0..600)) {
        let _ = records::read(Cursor::new(bytes), Path::new("fuzz.jsonl"));
    }

    #[test]
    fn the_records_reader_answers_any_mix_of_record_lines(
        lines in prop::collection::vec(prop_oneof![record_object(), json_value()], 0..8),
    ) {
        let text: String = lines.iter().map(|v| format!("{v}\n")).collect();
        match records::read(Cursor::new(text.clone()), Path::new("fuzz.jsonl")) {
            Ok(set) => prop_assert!(set.len() <= lines.len()),
            Err(e) => prop_assert!(!e.to_string().is_empty()),
        }
    }

    #[test]
    fn the_task_loader_answers_any_change_to_a_real_task(key in 0usize..64, value in json_value(), drop in any::<bool>()) {
        let dir = tempfile::tempdir().expect("temp dir");
        let real: Vec<Value> = serde_json::from_str(
            &std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/data/tasks/gitlab.v1.json")).expect("task file"),
        ).expect("task json");
        let mut t = real[key % real.len()].clone();
        if let Some(obj) = t.as_object_mut() {
            let k = obj.keys().nth(key % obj.len().max(1)).cloned().unwrap_or_default();
            if drop { obj.remove(&k); } else { obj.insert(k, value); }
        }
        let path = dir.path().join("tasks.json");
        std::fs::write(&path, Value::Array(vec![t]).to_string()).expect("write");
        let _ = task::load_any(&path);
        let _ = task::load_task_file(&path, skillshift_common::Site::Gitlab);
    }

    #[test]
    fn the_task_loader_answers_any_json(value in json_value()) {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("tasks.json");
        std::fs::write(&path, value.to_string()).expect("write");
        let _ = task::load_any(&path);
        let _ = task::load_task_file(&path, skillshift_common::Site::Gitlab);
    }

    #[test]
    fn a_skill_library_that_checks_declares_every_placeholder(
        skill in 0usize..64, name in ".{0,12}", param in "[a-z]{0,6}", text in ".{0,8}(\\{\\{[a-z]{0,6}(\\}\\})?)?.{0,8}",
    ) {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/data/skills/example.json");
        let mut lib: Value = serde_json::from_str(&std::fs::read_to_string(path).expect("library")).expect("json");
        let skills = lib["skills"].as_array_mut().expect("skills");
        let n = skills.len();
        let s = &mut skills[skill % n];
        s["name"] = Value::from(name);
        s["params"] = json!([param]);
        s["steps"] = json!([{"action": "answer", "text": text}]);
        let Ok(lib) = serde_json::from_value::<SkillLibrary>(lib) else { return Ok(()) };
        if lib.check().is_ok() {
            for s in &lib.skills {
                prop_assert!(!s.name.trim().is_empty(), "an empty skill name passed");
                for step in &s.steps {
                    for t in step.texts() {
                        for p in placeholders(t) {
                            prop_assert!(s.params.iter().any(|d| d == p), "undeclared {{{{{p}}}}} in {}", s.name);
                        }
                    }
                    let args: BTreeMap<String, String> = s.params.iter().map(|p| (p.clone(), "v".into())).collect();
                    let bound = step.bind(&args);
                    prop_assert!(bound.texts().iter().all(|t| !t.contains("{{")), "a placeholder survived binding");
                }
            }
        }
    }

    #[test]
    fn the_action_parser_answers_any_text_and_round_trips_what_it_accepts(
        text in prop_oneof![
            ".{0,40}",
            "(click|type|hover|press|scroll|goto|stop|go_back|go_forward|tab_focus|new_tab|close_tab) ?(\\[.{0,10}\\] ?){0,3}",
        ],
    ) {
        if let Ok(a) = Action::parse(&text) {
            let again = Action::parse(&a.to_string());
            prop_assert_eq!(again, Ok(a));
        }
    }

    #[test]
    fn wire_records_convert_or_fail_and_what_converts_round_trips(
        uid in prop_oneof!["skillshift\\.(gitlab|magento|wordpress)\\.v[12]\\.[0-9]{1,3}", ".{0,20}"],
        site in prop_oneof!["gitlab|magento|wordpress", ".{0,8}"],
        condition in prop_oneof!["src|src-perc|src-exec|tgt|tgt-perc|tgt-exec", ".{0,8}"],
        success in any::<Option<bool>>(),
        steps in any::<Option<u32>>(),
        outcome in prop::option::of(prop_oneof!["success|failure|timeout|error", ".{0,8}"]),
        attempt in any::<Option<u32>>(),
        tokens in any::<Option<u64>>(),
        cost in prop::option::of(prop_oneof![-1e3f64..1e3, Just(f64::NAN), Just(f64::INFINITY)]),
    ) {
        let wire = v1::RunRecord {
            uid, site, condition, success, steps, outcome, attempt, tokens_in: tokens, cost_usd: cost,
            ..Default::default()
        };
        if let Ok(r) = Record::try_from(wire) {
            let back = Record::try_from(v1::RunRecord::from(&r));
            prop_assert_eq!(back.as_ref().ok(), Some(&r), "{:?}", back);
        }
    }

    #[test]
    fn wire_assignments_convert_or_fail_and_what_converts_round_trips(
        sweep in ".{0,12}", unit in any::<u32>(), attempt in any::<u32>(),
        uid in prop_oneof!["skillshift\\.(gitlab|magento|wordpress)\\.v[12]\\.[0-9]{1,3}", ".{0,20}"],
        condition in prop_oneof!["src|src-perc|src-exec|tgt|tgt-perc|tgt-exec", ".{0,8}"],
        agent in ".{0,8}",
        skills_json in prop::option::of(prop_oneof![json_value().prop_map(|v| v.to_string()), ".{0,12}"]),
        profile_json in prop::option::of(json_value().prop_map(|v| v.to_string())),
    ) {
        let a = v1::Assignment {
            attempt: Some(v1::AttemptRef { sweep, unit, attempt }),
            uid, condition, agent, skills_json, perturbation_profile_json: profile_json,
            ..Default::default()
        };
        if let Ok((key, spec)) = convert::assignment_from_wire(a) {
            let again = convert::assignment_from_wire(convert::assignment_to_wire(&key, &spec));
            prop_assert_eq!(again.ok(), Some((key.clone(), spec)));
            prop_assert_eq!(AttemptKey::try_from(v1::AttemptRef::from(&key)).ok(), Some(key));
        }
    }
}
