//! The assignment decision, a pure function of a snapshot of the state.
//!
//! Rules, in order:
//! 1. a worker only receives units whose (site, version) it hosts, and a
//!    simulated worker (`--simulate`) only those of simulated sweeps, a real
//!    one only those of real sweeps (the contract says which, so a made-up
//!    record never carries a real contract's digest);
//! 2. a worker never holds more attempts than its credits (free slots) allow;
//! 3. fairness across sweeps: each pick goes to the sweep with the fewest
//!    running attempts among those with work this worker can run (ties: the
//!    older sweep);
//! 4. affinity: within that sweep, the worker stays on its current
//!    site-version while there is work for it (a switch costs a site reset),
//!    otherwise it moves to the site-version with the most queued work.
//!
//! Workers take one pick per round, round-robin, so free capacity spreads
//! evenly. The engine applies the picks (pops units, grants leases).

use skillshift_common::{Site, Version};

/// Number of (site, version) pairs.
pub const SV_COUNT: usize = 6;

/// Index of a (site, version) pair in `0..SV_COUNT`.
pub fn sv_index(site: Site, version: Version) -> usize {
    site.index() * 2 + version.index()
}

/// The (site, version) pair of an index.
pub fn sv_of(index: usize) -> (Site, Version) {
    (Site::ALL[index / 2], Version::ALL[index % 2])
}

/// What the scheduler sees of a worker.
#[derive(Debug, Clone, PartialEq)]
pub struct WorkerView {
    /// Bit `sv_index` set when the worker hosts that site-version.
    pub hosts: u8,
    /// Makes its records up (`worker --simulate`).
    pub simulated: bool,
    pub credits: u32,
    pub affinity: Option<usize>,
}

/// What the scheduler sees of a sweep.
#[derive(Debug, Clone, PartialEq)]
pub struct SweepView {
    /// Queued units per site-version.
    pub queued: [u32; SV_COUNT],
    pub running: u32,
    /// Its contract says `simulated`: only simulated workers run it.
    pub simulated: bool,
}

/// One decision: give the next queued unit of `sweep` at `sv` to `worker`
/// (indices into the slices passed to [`schedule`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Pick {
    pub worker: usize,
    pub sweep: usize,
    pub sv: usize,
}

/// Decides every assignment that can be made now. Sweeps are given oldest first.
pub fn schedule(workers: &[WorkerView], sweeps: &[SweepView]) -> Vec<Pick> {
    let mut workers: Vec<WorkerView> = workers.to_vec();
    let mut sweeps: Vec<SweepView> = sweeps.to_vec();
    let mut picks = Vec::new();
    loop {
        let mut progressed = false;
        for (w, worker) in workers.iter_mut().enumerate() {
            if worker.credits == 0 {
                continue;
            }
            let Some(pick) = pick_for(w, worker, &sweeps) else {
                // Nothing this worker may run: it keeps its credits.
                worker.credits = 0;
                continue;
            };
            let s = &mut sweeps[pick.sweep];
            s.queued[pick.sv] -= 1;
            s.running += 1;
            worker.credits -= 1;
            worker.affinity = Some(pick.sv);
            picks.push(pick);
            progressed = true;
        }
        if !progressed {
            return picks;
        }
    }
}

fn pick_for(w: usize, worker: &WorkerView, sweeps: &[SweepView]) -> Option<Pick> {
    let runnable =
        |s: &SweepView, sv: usize| s.simulated == worker.simulated && worker.hosts & (1 << sv) != 0 && s.queued[sv] > 0;
    let sweep = sweeps
        .iter()
        .enumerate()
        .filter(|(_, s)| (0..SV_COUNT).any(|sv| runnable(s, sv)))
        .min_by_key(|(i, s)| (s.running, *i))
        .map(|(i, _)| i)?;
    let s = &sweeps[sweep];
    let sv = match worker.affinity {
        Some(a) if runnable(s, a) => a,
        _ => (0..SV_COUNT).filter(|&sv| runnable(s, sv)).max_by_key(|&sv| (s.queued[sv], SV_COUNT - sv))?,
    };
    Some(Pick { worker: w, sweep, sv })
}

#[cfg(test)]
mod tests {
    use super::*;

    const ALL: u8 = 0b11_1111;

    fn worker(hosts: u8, credits: u32, affinity: Option<usize>) -> WorkerView {
        WorkerView { hosts, simulated: false, credits, affinity }
    }

    fn sweep(queued: [u32; SV_COUNT], running: u32) -> SweepView {
        SweepView { queued, running, simulated: false }
    }

    #[test]
    fn simulated_workers_run_simulated_sweeps_and_real_workers_real_ones() {
        let sim = WorkerView { simulated: true, ..worker(ALL, 2, None) };
        let real_sweep = sweep([5; 6], 0);
        assert!(
            schedule(std::slice::from_ref(&sim), std::slice::from_ref(&real_sweep)).is_empty(),
            "a made-up record never joins a real run"
        );
        let sim_sweep = SweepView { simulated: true, ..sweep([5; 6], 0) };
        assert!(
            schedule(&[worker(ALL, 2, None)], std::slice::from_ref(&sim_sweep)).is_empty(),
            "nor a real one a simulated run"
        );
        let picks = schedule(&[sim, worker(ALL, 1, None)], &[real_sweep, sim_sweep]);
        let pairs: Vec<(usize, usize)> = picks.iter().map(|p| (p.worker, p.sweep)).collect();
        assert_eq!(pairs, vec![(0, 1), (1, 0), (0, 1)]);
    }

    #[test]
    fn only_hosted_site_versions_are_assigned() {
        let gitlab_v2 = 1 << sv_index(Site::Gitlab, Version::V2);
        let picks = schedule(&[worker(gitlab_v2, 4, None)], &[sweep([5, 0, 5, 5, 5, 5], 0)]);
        assert!(picks.is_empty(), "no gitlab-v2 work queued: {picks:?}");
        let picks = schedule(&[worker(gitlab_v2, 4, None)], &[sweep([5, 2, 5, 5, 5, 5], 0)]);
        assert_eq!(picks.len(), 2);
        assert!(picks.iter().all(|p| p.sv == sv_index(Site::Gitlab, Version::V2)));
    }

    #[test]
    fn slots_bound_the_number_of_picks() {
        let picks = schedule(&[worker(ALL, 3, None), worker(ALL, 0, None)], &[sweep([100; 6], 0)]);
        assert_eq!(picks.len(), 3);
        assert!(picks.iter().all(|p| p.worker == 0));
    }

    #[test]
    fn a_worker_keeps_its_site_version_while_work_remains() {
        let picks = schedule(&[worker(ALL, 3, Some(4))], &[sweep([50, 50, 50, 50, 2, 50], 0)]);
        let svs: Vec<usize> = picks.iter().map(|p| p.sv).collect();
        // Two units left at sv 4, then it moves to the largest queue (the first of equals).
        assert_eq!(svs, vec![4, 4, 0]);
        // Without affinity it starts on the largest queue.
        let picks = schedule(&[worker(ALL, 1, None)], &[sweep([1, 2, 9, 3, 0, 0], 0)]);
        assert_eq!(picks[0].sv, 2);
    }

    #[test]
    fn picks_alternate_between_sweeps_by_running_count() {
        let picks = schedule(&[worker(ALL, 6, None)], &[sweep([10, 0, 0, 0, 0, 0], 2), sweep([10, 0, 0, 0, 0, 0], 0)]);
        let sweeps: Vec<usize> = picks.iter().map(|p| p.sweep).collect();
        assert_eq!(sweeps, vec![1, 1, 0, 1, 0, 1]);
    }

    #[test]
    fn capacity_spreads_round_robin_and_queues_never_go_negative() {
        let picks = schedule(&[worker(ALL, 5, None), worker(ALL, 5, None)], &[sweep([3, 0, 0, 0, 0, 0], 0)]);
        let by_worker: Vec<usize> = picks.iter().map(|p| p.worker).collect();
        assert_eq!(by_worker, vec![0, 1, 0]);
    }
}
