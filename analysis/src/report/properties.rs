//! Property tests of the analysis: the macro identity on random complete
//! grids, and admission of every summary the report emits.

use proptest::prelude::*;

use crate::cells::analyse;
use crate::leaderboard::validate;
use crate::records::read;
use crate::shape::{marginals, Grid};
use crate::summary::summarise;
use crate::synth::{write_grid, Plan};

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    /// mean(3 websites) == mean(6 conditions) == overall for any complete grid.
    #[test]
    fn identity_on_random_complete_grids(values in proptest::collection::vec(0.0f64..100.0, 18)) {
        let mut g: Grid<Option<f64>> = Grid::default();
        for (i, v) in values.iter().enumerate() {
            g.0[i / 6][i % 6] = Some(*v);
        }
        let t = marginals(&g);
        let overall = t.overall.unwrap();
        let w = t.values()[0..3].iter().map(|v| v.unwrap()).sum::<f64>() / 3.0;
        let c = t.values()[3..9].iter().map(|v| v.unwrap()).sum::<f64>() / 6.0;
        prop_assert!((w - overall).abs() < 1e-9 && (c - overall).abs() < 1e-9);
    }

    /// Every summary of a full run passes `leaderboard validate`, whatever
    /// its outcomes, retries, reps and skill usage (including none at all).
    #[test]
    fn every_full_run_summary_is_admitted(
        seed in any::<u64>(),
        reps in 1u32..3,
        error_pct in 0u64..30,
        success_pct in 0u64..=100,
        skills in any::<bool>(),
        max_calls in 0u64..4,
    ) {
        let plan = Plan { treatment: "P".into(), reps, error_pct, skills, max_calls, success_pct, seed };
        let mut buf = Vec::new();
        write_grid(&plan, &mut buf).unwrap();
        let set = read(buf.as_slice(), std::path::Path::new("p.jsonl")).unwrap();
        let a = analyse(set.select(None).unwrap());
        let s = summarise(&a, false).unwrap().summary;
        let v = serde_json::to_value(&s).unwrap();
        let refusals = validate(&v);
        prop_assert!(refusals.is_empty(), "{:?}", refusals);
        let sr = s.metrics.sr.unwrap();
        let w = sr.values()[0..3].iter().map(|v| v.unwrap()).sum::<f64>() / 3.0;
        prop_assert!((w - sr.overall.unwrap()).abs() < 1e-9);
        // null is never 0: without invocations SFR is null, with a reason.
        if !skills || max_calls == 0 {
            prop_assert!(s.metrics.sfr.is_none());
            prop_assert!(s.reasons.contains_key("SFR"));
        }
    }
}
