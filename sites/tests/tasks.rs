//! The generated task sets of the admin sites, as their module headers state
//! them: task `i` of v1 and v2 is the same intent and instantiation, the mix
//! of evaluators and a spread of difficulty. That v1's reference solution fails on v2
//! wherever the two versions' solutions differ is proven in Chromium (`tests/fixture_shifts.rs`).

use std::collections::{BTreeMap, BTreeSet};

use skillshift_common::task::EvalType;
use skillshift_common::{Site, Version};
use skillshift_sites::GeneratedTask;

/// What one site's task set must look like.
struct Expected {
    site: Site,
    /// Tasks per evaluator kind.
    mix: [(&'static str, usize); 3],
    /// The version whose solutions show the spread, and its shortest solution at most.
    shortest: (Version, usize),
    /// Tasks whose reference solution differs between the versions, at least.
    differing: usize,
}

const EXPECTED: &[Expected] = &[
    Expected {
        site: Site::Magento,
        mix: [("program", 40), ("string", 46), ("url", 28)],
        shortest: (Version::V1, 1),
        differing: 10,
    },
    Expected {
        site: Site::Wordpress,
        mix: [("program", 27), ("string", 32), ("url", 20)],
        shortest: (Version::V2, 3),
        differing: 15,
    },
];

fn kind(t: &GeneratedTask) -> &'static str {
    match t.task.eval.eval_types[0] {
        EvalType::StringMatch => "string",
        EvalType::ProgramHtml => "program",
        EvalType::UrlMatch => "url",
    }
}

#[test]
fn counts_mix_and_alignment() {
    for e in EXPECTED {
        let site = e.site;
        let v1 = skillshift_sites::tasks(site, Version::V1);
        let v2 = skillshift_sites::tasks(site, Version::V2);
        assert_eq!((v1.len(), v2.len()), (site.n_tasks(), site.n_tasks()), "{site}");
        let mut mix: BTreeMap<&str, usize> = BTreeMap::new();
        for (a, b) in v1.iter().zip(&v2) {
            assert_eq!(a.task.intent, b.task.intent, "{site} task {}", a.task.task_id);
            assert_eq!(a.task.instantiation_dict, b.task.instantiation_dict, "{site} task {}", a.task.task_id);
            *mix.entry(kind(a)).or_default() += 1;
            assert_eq!(a.task.require_reset, kind(a) == "program", "{site} task {}", a.task.task_id);
        }
        assert_eq!(mix, BTreeMap::from(e.mix), "{site}");
        let differing = v1.iter().zip(&v2).filter(|(a, b)| a.solution != b.solution).count();
        assert!(differing >= e.differing, "{site}: only {differing} tasks differ between versions");
        let templates: BTreeSet<u32> = v1.iter().map(|t| t.task.intent_template_id).collect();
        assert!(templates.len() >= 12, "{site}: {} templates", templates.len());
        let (version, shortest) = e.shortest;
        let tasks = if version == Version::V1 { &v1 } else { &v2 };
        let lens: Vec<usize> = tasks.iter().map(|t| t.solution.len()).collect();
        let (min, max) = (lens.iter().min().copied(), lens.iter().max().copied());
        assert!(
            min >= Some(1) && min <= Some(shortest) && max >= Some(8),
            "{site} {version} difficulty spread: {lens:?}"
        );
    }
}
