//! `tasks validate` accepts the shipped data and, on a broken copy, names
//! the file, the task and the field.

#![allow(clippy::unwrap_used)] // test helpers: a failed unwrap is a failed test

use std::path::{Path, PathBuf};

use skillshift_common::Site;
use skillshift_sites::validate::{validate, Problem};

fn shipped() -> PathBuf {
    PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../data"))
}

/// The sites whose task files are shipped (all three once every module has landed).
fn shipped_sites() -> Vec<Site> {
    Site::ALL
        .iter()
        .copied()
        .filter(|s| !skillshift_sites::tasks(*s, skillshift_common::Version::V1).is_empty())
        .collect()
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), target).unwrap();
        }
    }
}

fn broken(edit: impl FnOnce(&mut serde_json::Value), file: &str) -> (tempfile::TempDir, Vec<Problem>) {
    let dir = tempfile::tempdir().unwrap();
    copy_dir(&shipped(), dir.path());
    let path = dir.path().join(file);
    let mut value: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    edit(&mut value);
    std::fs::write(&path, serde_json::to_string_pretty(&value).unwrap()).unwrap();
    let problems = validate(dir.path(), &shipped_sites()).expect_err("the broken copy must not validate");
    (dir, problems)
}

#[test]
fn the_shipped_data_validates() {
    let summary = validate(&shipped(), &shipped_sites())
        .unwrap_or_else(|p| panic!("{}", p.iter().map(|p| p.to_string()).collect::<Vec<_>>().join("\n")));
    assert!(summary.files.iter().any(|(s, _, n)| *s == Site::Gitlab && *n == 162));
    assert!(summary.calibration_families >= 14);
}

#[test]
fn a_missing_field_names_file_task_and_field() {
    let (_dir, problems) = broken(
        |v| {
            v[7].as_object_mut().unwrap().remove("start_url");
        },
        "tasks/gitlab.v1.json",
    );
    let p = problems.iter().find(|p| p.task == Some(7)).expect("a problem at task 7");
    assert!(p.file.ends_with("tasks/gitlab.v1.json"), "{p}");
    assert_eq!(p.field, "start_url", "{p}");
}

#[test]
fn a_bad_locator_and_a_sparse_id_are_named() {
    let (_dir, problems) = broken(
        |v| {
            let html_task = v
                .as_array_mut()
                .unwrap()
                .iter_mut()
                .find(|t| !t["eval"]["program_html"].as_array().unwrap().is_empty())
                .unwrap();
            html_task["eval"]["program_html"][0]["locator"] = "window.location.href".into();
            v[3]["task_id"] = 99.into();
        },
        "tasks/gitlab.v2.json",
    );
    let text: Vec<String> = problems.iter().map(|p| p.to_string()).collect();
    assert!(problems.iter().any(|p| p.field == "eval.program_html[0].locator" && p.task.is_some()), "{text:?}");
    assert!(problems.iter().any(|p| p.field == "task_id" && p.task == Some(3)), "{text:?}");
}

#[test]
fn misaligned_families_and_unfilled_placeholders_are_named() {
    let (_dir, problems) = broken(
        |v| {
            v[12]["intent"] = "Close issue #{{iid}} of something".into();
        },
        "tasks/gitlab.v2.json",
    );
    assert!(problems.iter().any(|p| p.task == Some(12) && p.field == "intent" && p.file.ends_with("gitlab.v2.json")));
}

#[test]
fn an_unresolvable_calibration_family_is_named() {
    let (_dir, problems) = broken(
        |v| {
            v["sites"]["gitlab"]["families"][2] = 400.into();
        },
        "calibration_set.json",
    );
    assert!(
        problems.iter().any(|p| p.file.ends_with("calibration_set.json")
            && p.field == "sites.gitlab.families"
            && p.message.contains("gitlab.400")),
        "{problems:?}"
    );
}
