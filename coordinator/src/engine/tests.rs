//! Engine tests: leases, retries, late records and restarts, with time
//! driven by hand and no network.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use skillshift_common::{Condition, Outcome, Record, Site, Version};
use skillshift_proto::convert::AttemptKey;
use tokio::sync::{mpsc, oneshot};

use super::*;
use crate::planner::{SweepSpec, TreatmentSpec};
use crate::status::SweepState;
use crate::store::{StoreOp, StoredRecord, SweepRows};

const TTL: Duration = Duration::from_secs(30);
/// The wall clock at the start of every test (2026-12-01T00:00:00Z).
const WALL_START_MS: u64 = 1_796_083_200_000;

fn spec(max_retries: u32) -> SweepSpec {
    let mut s = SweepSpec::full_grid(TreatmentSpec { name: "CONTROL".into(), skills: None });
    s.sites = vec![Site::Gitlab];
    s.conditions = vec![Condition::Src, Condition::Tgt];
    s.families = BTreeMap::from([(Site::Gitlab, vec![0, 1])]);
    s.max_retries = max_retries;
    s
}

struct Harness {
    e: Engine,
    t: Instant,
    /// The wall clock the engine reads (a shared handle).
    wall: ManualClock,
    ops: Vec<StoreOp>,
    sent: Vec<(String, Outbound)>,
    next_conn: u64,
}

impl Harness {
    fn new() -> Harness {
        let wall = ManualClock::at(WALL_START_MS);
        let e = Engine::new(TTL, wall.clone(), SequentialIds::default());
        Harness { e, t: Instant::now(), wall, ops: Vec::new(), sent: Vec::new(), next_conn: 0 }
    }

    fn step(&mut self, input: Input) {
        self.e.handle(input, self.t);
        self.flush();
    }

    fn flush(&mut self) {
        self.e.schedule(self.t);
        let (ops, effects) = self.e.take_outputs();
        self.ops.extend(ops);
        for eff in effects {
            match eff {
                Effect::Send { worker, msg, .. } => self.sent.push((worker, msg)),
                Effect::Reply(f) => f(),
            }
        }
    }

    fn advance(&mut self, d: Duration) {
        self.t += d;
        self.step(Input::Tick);
    }

    fn submit(&mut self, spec: SweepSpec) -> String {
        let (tx, mut rx) = oneshot::channel();
        self.step(Input::Control(ControlCmd::Submit(Box::new(spec), tx)));
        rx.try_recv().expect("reply").expect("accepted")
    }

    fn worker(&mut self, hosts: Vec<(Site, Version)>, slots: u32) -> (String, u64) {
        let (tx, mut rx) = oneshot::channel();
        self.step(Input::Register { name: "w".into(), hosts, slots, previous_id: None, reply: tx });
        let id = rx.try_recv().expect("id");
        let conn = self.connect(&id, vec![], slots);
        (id, conn)
    }

    fn connect(&mut self, id: &str, running: Vec<AttemptKey>, free_slots: u32) -> u64 {
        self.next_conn += 1;
        let (tx, _rx) = mpsc::channel(16);
        let conn = Conn { id: self.next_conn, tx };
        self.step(Input::Connect { worker: id.into(), conn, running, free_slots });
        self.next_conn
    }

    fn assigned(&mut self, worker: &str) -> Vec<AttemptKey> {
        let mut out = Vec::new();
        self.sent.retain(|(w, m)| match m {
            Outbound::Assign(k, _) if w == worker => {
                out.push(k.clone());
                false
            }
            _ => true,
        });
        out
    }

    fn acks(&mut self, worker: &str) -> Vec<AttemptKey> {
        let mut out = Vec::new();
        self.sent.retain(|(w, m)| match m {
            Outbound::Ack(k) if w == worker => {
                out.extend(k.iter().cloned());
                false
            }
            _ => true,
        });
        out
    }

    fn record(&mut self, worker: &str, conn: u64, key: &AttemptKey, outcome: Outcome, error: Option<&str>) {
        let rec = self.make_record(key, outcome, error);
        self.step(Input::Worker {
            worker: worker.into(),
            conn,
            event: WorkerEvent::Record(key.clone(), Box::new(rec)),
        });
    }

    fn make_record(&self, key: &AttemptKey, outcome: Outcome, error: Option<&str>) -> Record {
        let s = &self.e.sweeps[self.e.by_id[&key.sweep]];
        let unit = s.units[key.unit as usize];
        let mut r = Record::new(unit.uid(), unit.condition);
        r.outcome = Some(outcome);
        r.success = (outcome != Outcome::Error).then_some(outcome == Outcome::Success);
        r.error = error.map(String::from);
        r.attempt = Some(key.attempt);
        r.rep = Some(unit.rep);
        r
    }

    fn status(&mut self, id: &str) -> SweepStatus {
        let (tx, mut rx) = oneshot::channel();
        self.step(Input::Control(ControlCmd::Get(id.into(), tx)));
        rx.try_recv().expect("reply").expect("known sweep")
    }

    fn stored(&self, key: &AttemptKey) -> Option<&StoredRecord> {
        self.ops.iter().rev().find_map(|op| match op {
            StoreOp::Record(k, r) if k == key => Some(r),
            _ => None,
        })
    }
}

fn all_hosts() -> Vec<(Site, Version)> {
    Site::ALL.iter().flat_map(|s| Version::ALL.iter().map(move |v| (*s, *v))).collect()
}

#[test]
fn a_sweep_runs_to_done_and_acks_follow_the_records() {
    let mut h = Harness::new();
    let id = h.submit(spec(2));
    assert_eq!(h.status(&id).state, SweepState::Queued);
    let (w, c) = h.worker(all_hosts(), 2);
    let first = h.assigned(&w);
    assert_eq!(first.len(), 2, "two slots, two assignments");
    assert!(h.ops.iter().any(|op| matches!(op, StoreOp::Attempt(k, _) if *k == first[0])), "lease is written");
    for k in &first {
        h.record(&w, c, k, Outcome::Success, None);
    }
    assert_eq!(h.acks(&w), first);
    h.step(Input::Worker { worker: w.clone(), conn: c, event: WorkerEvent::Ready(2) });
    let second = h.assigned(&w);
    assert_eq!(second.len(), 2);
    for k in &second {
        h.record(&w, c, k, Outcome::Failure, None);
    }
    assert_eq!(h.acks(&w), second);
    let st = h.status(&id);
    assert_eq!(st.state, SweepState::Done);
    assert_eq!((st.units.total, st.units.done, st.units.invalid), (4, 4, 0));
    assert_eq!((st.attempts.total, st.attempts.error), (4, 0));
    // A resend of a stored record is acknowledged again and stored once.
    let before = h.ops.len();
    h.record(&w, c, &first[0], Outcome::Success, None);
    assert_eq!(h.ops.len(), before, "idempotent ingest writes nothing");
    assert_eq!(h.acks(&w), vec![first[0].clone()]);
}

#[test]
fn only_hosted_site_versions_reach_a_worker() {
    let mut h = Harness::new();
    h.submit(spec(2));
    let (w, _) = h.worker(vec![(Site::Gitlab, Version::V2), (Site::Magento, Version::V1)], 8);
    let got = h.assigned(&w);
    assert_eq!(got.len(), 2, "only the two tgt units are gitlab v2");
    for k in got {
        let s = &h.e.sweeps[0];
        assert_eq!(s.units[k.unit as usize].condition, Condition::Tgt);
    }
}

#[test]
fn silence_past_the_ttl_loses_the_attempt_and_a_late_record_is_kept_under_its_own_attempt() {
    let mut h = Harness::new();
    let id = h.submit(spec(2));
    let (w1, c1) = h.worker(all_hosts(), 1);
    let k0 = h.assigned(&w1).pop().expect("assignment");
    h.advance(TTL - Duration::from_millis(1));
    assert!(h.stored(&k0).is_none(), "not lost before the ttl");
    h.advance(Duration::from_millis(1));
    let lost = h.stored(&k0).expect("lost attempt recorded");
    assert!(lost.synthetic);
    assert_eq!(lost.record.outcome, Some(Outcome::Error));
    assert_eq!(lost.record.error.as_deref(), Some(WORKER_LOST));
    // The unit runs again as attempt 1 on another worker.
    let (w2, c2) = h.worker(all_hosts(), 1);
    let k1 = h.assigned(&w2).into_iter().find(|k| k.unit == k0.unit).expect("retried unit");
    assert_eq!(k1.attempt, 1);
    // The paused worker wakes up and delivers attempt 0: stored under attempt 0.
    h.record(&w1, c1, &k0, Outcome::Success, None);
    assert_eq!(h.acks(&w1), vec![k0.clone()]);
    let late = h.stored(&k0).expect("late record");
    assert!(!late.synthetic);
    assert_eq!(late.record.outcome, Some(Outcome::Success));
    // Attempt 1 still delivers; both stay, the outcome rule picks attempt 0.
    h.record(&w2, c2, &k1, Outcome::Failure, None);
    assert_eq!(h.stored(&k1).map(|r| r.record.outcome), Some(Some(Outcome::Failure)));
    let st = h.status(&id);
    assert_eq!(st.cells.iter().map(|c| c.successes).sum::<u64>(), 1);
}

#[test]
fn a_broken_stream_releases_at_once_and_errors_retry_up_to_max_retries() {
    let mut h = Harness::new();
    let id = h.submit(spec(1));
    let (w, c) = h.worker(all_hosts(), 1);
    let k0 = h.assigned(&w).pop().expect("a");
    h.step(Input::Disconnect { worker: w.clone(), conn: c });
    assert_eq!(h.stored(&k0).and_then(|r| r.record.error.clone()).as_deref(), Some(WORKER_LOST));
    let c = h.connect(&w, vec![], 1);
    let k1 = h.assigned(&w).pop().expect("b");
    assert_eq!((k1.unit, k1.attempt), (k0.unit, 1));
    h.record(&w, c, &k1, Outcome::Error, Some("browser"));
    // Two error attempts > max_retries 1: the unit is invalid, not requeued.
    h.step(Input::Worker { worker: w.clone(), conn: c, event: WorkerEvent::Ready(1) });
    let next = h.assigned(&w).pop().expect("c");
    assert_ne!(next.unit, k0.unit);
    let st = h.status(&id);
    assert_eq!(st.units.invalid, 1);
    assert_eq!(st.attempts.error, 2);
}

#[test]
fn records_that_do_not_match_their_assignment_are_refused_and_not_stored() {
    let mut h = Harness::new();
    h.submit(spec(2));
    let (w, c) = h.worker(all_hosts(), 1);
    let k = h.assigned(&w).pop().expect("a");
    let mut bad = h.make_record(&k, Outcome::Success, None);
    bad.rep = Some(7);
    let before = h.ops.len();
    h.step(Input::Worker { worker: w.clone(), conn: c, event: WorkerEvent::Record(k.clone(), Box::new(bad)) });
    let unknown = AttemptKey { attempt: 5, ..k.clone() };
    let rec = h.make_record(&k, Outcome::Success, None);
    h.step(Input::Worker { worker: w.clone(), conn: c, event: WorkerEvent::Record(unknown, Box::new(rec)) });
    assert_eq!(h.ops.len(), before, "nothing stored");
    let reasons: Vec<String> = h
        .sent
        .iter()
        .filter_map(|(_, m)| match m {
            Outbound::Reject(_, r) => Some(r.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(reasons.len(), 2);
    assert!(reasons[0].contains("rep 7"), "{reasons:?}");
    assert!(reasons[1].contains("never assigned"), "{reasons:?}");
}

#[test]
fn after_a_restart_running_attempts_reattach_or_expire() {
    let mut h = Harness::new();
    let id = h.submit(spec(2));
    let (w, _) = h.worker(all_hosts(), 2);
    let keys = h.assigned(&w);
    // Rebuild a fresh engine from what was written.
    let mut rows = crate::store::SweepRows {
        meta: match h.ops.iter().find(|o| matches!(o, StoreOp::Sweep(_))) {
            Some(StoreOp::Sweep(m)) => m.clone(),
            _ => panic!("no sweep written"),
        },
        units: Vec::new(),
        attempts: Vec::new(),
        records: Vec::new(),
    };
    for op in &h.ops {
        match op {
            StoreOp::Units(_, u) => rows.units = u.clone(),
            StoreOp::Attempt(k, a) => rows.attempts.push((k.clone(), a.clone())),
            _ => {}
        }
    }
    let mut h2 = Harness::new();
    h2.e.restore(vec![rows], h2.t);
    assert_eq!(h2.status(&id).units.running, 2);
    let (tx, mut rx) = oneshot::channel();
    h2.step(Input::Register {
        name: "w".into(),
        hosts: all_hosts(),
        slots: 2,
        previous_id: Some(w.clone()),
        reply: tx,
    });
    assert_eq!(rx.try_recv().expect("id"), w, "the worker keeps its id");
    let c = h2.connect(&w, vec![keys[0].clone()], 1);
    h2.advance(TTL / 2);
    h2.step(Input::Worker { worker: w.clone(), conn: c, event: WorkerEvent::Heartbeat(vec![keys[0].clone()]) });
    h2.advance(TTL / 2);
    assert!(h2.stored(&keys[0]).is_none(), "re-attached attempt is not lost");
    assert_eq!(h2.stored(&keys[1]).and_then(|r| r.record.error.clone()).as_deref(), Some(WORKER_LOST));
    h2.record(&w, c, &keys[0], Outcome::Success, None);
    assert_eq!(h2.acks(&w), vec![keys[0].clone()]);
}

#[test]
fn cancel_holds_queued_units_and_resume_requeues_them() {
    let mut h = Harness::new();
    let id = h.submit(spec(0));
    let (w, c) = h.worker(all_hosts(), 1);
    let k = h.assigned(&w).pop().expect("a");
    let (tx, _rx) = oneshot::channel();
    h.step(Input::Control(ControlCmd::Cancel(id.clone(), tx)));
    assert!(h.sent.iter().any(|(_, m)| matches!(m, Outbound::Cancel(x) if *x == k)));
    h.record(&w, c, &k, Outcome::Error, Some(CANCELLED));
    h.step(Input::Worker { worker: w.clone(), conn: c, event: WorkerEvent::Ready(1) });
    assert!(h.assigned(&w).is_empty(), "a cancelled sweep assigns nothing");
    assert_eq!(h.status(&id).state, SweepState::Cancelled);
    let (tx, _rx) = oneshot::channel();
    h.step(Input::Control(ControlCmd::Resume(id.clone(), tx)));
    let again = h.assigned(&w);
    assert_eq!(again.len(), 1);
    // A cancelled attempt does not use up the (zero) retries: the unit ran again.
    assert!(again.iter().any(|x| x.unit == k.unit && x.attempt == 1) || h.status(&id).units.invalid == 0);
}

#[test]
fn a_spent_cost_budget_stops_the_sweep_cancels_its_running_attempts_and_refuses_resume() {
    let mut h = Harness::new();
    let mut s = spec(2);
    s.cost_budget_usd = Some(0.5);
    let id = h.submit(s);
    let (w, c) = h.worker(all_hosts(), 2);
    let keys = h.assigned(&w);
    assert_eq!(keys.len(), 2);
    let costly = |h: &Harness, k: &AttemptKey, usd: f64| {
        let mut r = h.make_record(k, Outcome::Failure, None);
        r.cost_usd = Some(usd);
        r
    };
    let r = costly(&h, &keys[0], 0.3);
    h.step(Input::Worker { worker: w.clone(), conn: c, event: WorkerEvent::Record(keys[0].clone(), Box::new(r)) });
    let st = h.status(&id);
    assert_eq!(st.state, SweepState::Running, "0.30 of 0.50 spent: the sweep goes on");
    assert!((st.cost_usd - 0.3).abs() < 1e-9);
    assert_eq!(st.stopped, None);
    // The second record crosses the budget: nothing more is assigned, the running attempt is cancelled.
    h.step(Input::Worker { worker: w.clone(), conn: c, event: WorkerEvent::Ready(1) });
    let third = h.assigned(&w);
    assert_eq!(third.len(), 1);
    let r = costly(&h, &keys[1], 0.25);
    h.step(Input::Worker { worker: w.clone(), conn: c, event: WorkerEvent::Record(keys[1].clone(), Box::new(r)) });
    let st = h.status(&id);
    assert_eq!(st.state, SweepState::Cancelled);
    assert_eq!(st.stopped.as_deref(), Some("cost budget of $0.50 reached ($0.55 spent)"));
    assert!(h.sent.iter().any(|(to, m)| to == &w && matches!(m, Outbound::Cancel(k) if *k == third[0])));
    assert!(
        h.ops.iter().any(|op| matches!(op, StoreOp::Sweep(m) if m.cancelled && m.stopped.is_some())),
        "the stop is stored, so it survives a restart"
    );
    h.step(Input::Worker { worker: w.clone(), conn: c, event: WorkerEvent::Ready(2) });
    assert!(h.assigned(&w).is_empty(), "a stopped sweep assigns nothing");
    // Resume is refused while the budget is spent.
    let (tx, mut rx) = oneshot::channel();
    h.step(Input::Control(ControlCmd::Resume(id.clone(), tx)));
    let st = rx.try_recv().expect("reply").expect("known sweep");
    assert_eq!(st.state, SweepState::Cancelled);
    assert!(st.stopped.is_some());
    h.step(Input::Worker { worker: w.clone(), conn: c, event: WorkerEvent::Ready(2) });
    assert!(h.assigned(&w).is_empty());
}

#[test]
fn a_restart_remembers_what_a_sweep_spent() {
    let mut h = Harness::new();
    let mut s = spec(2);
    s.cost_budget_usd = Some(10.0);
    let id = h.submit(s);
    let (w, c) = h.worker(all_hosts(), 1);
    let k = h.assigned(&w).pop().expect("assignment");
    let mut r = h.make_record(&k, Outcome::Success, None);
    r.cost_usd = Some(1.25);
    h.step(Input::Worker { worker: w.clone(), conn: c, event: WorkerEvent::Record(k.clone(), Box::new(r)) });
    // Rebuild from what was written, as after a kill -9.
    let mut meta = None;
    let mut units = Vec::new();
    let mut records = Vec::new();
    for op in &h.ops {
        match op {
            StoreOp::Sweep(m) => meta = Some(m.clone()),
            StoreOp::Units(_, u) => units = u.clone(),
            StoreOp::Record(k, r) => records.push((k.clone(), r.clone())),
            _ => {}
        }
    }
    let rows = SweepRows { meta: meta.expect("sweep stored"), units, attempts: Vec::new(), records };
    let mut e = Engine::new(TTL, ManualClock::at(WALL_START_MS), SequentialIds::default());
    e.restore(vec![rows], h.t);
    let (tx, mut rx) = oneshot::channel();
    e.handle(Input::Control(ControlCmd::Get(id, tx)), h.t);
    let st = rx.try_recv().expect("reply").expect("known sweep");
    assert!((st.cost_usd - 1.25).abs() < 1e-9);
}

#[test]
fn stored_times_come_from_the_engines_clock_and_ids_from_its_id_source() {
    let mut h = Harness::new();
    let id = h.submit(spec(2));
    assert_eq!(id, "sw-000000000001");
    assert_eq!(h.status(&id).created_ms, WALL_START_MS);
    h.wall.advance(1_500);
    let (w, _) = h.worker(all_hosts(), 1);
    assert_eq!(w, "w-000000000002");
    let k = h.assigned(&w).pop().expect("assignment");
    let started = h.ops.iter().find_map(|op| match op {
        StoreOp::Attempt(key, row) if *key == k => Some(row.started_ms),
        _ => None,
    });
    assert_eq!(started, Some(WALL_START_MS + 1_500));
}
