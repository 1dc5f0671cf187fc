//! Engine tests: leases, retries, late records and restarts, with time
//! driven by hand and no network.

use std::collections::{BTreeMap, HashMap};
use std::time::{Duration, Instant};

use skillshift_common::ids::{AttemptKey, SweepId};
use skillshift_common::{Condition, Outcome, Record, Site, Version};
use tokio::sync::{mpsc, oneshot};

use super::*;
use crate::limits::Limits;
use crate::planner::{SweepSpec, TreatmentSpec};
use crate::status::SweepState;
use crate::store::{StoreOp, StoredRecord, SweepRows, WorkerRow};

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
    /// Public id -> credential of the workers registered through the harness.
    credentials: HashMap<String, String>,
}

impl Harness {
    fn new() -> Harness {
        Harness::with_limits(Limits::default())
    }

    fn with_limits(limits: Limits) -> Harness {
        let wall = ManualClock::at(WALL_START_MS);
        let e = Engine::with_limits(TTL, limits, wall.clone(), SequentialIds::default());
        Harness {
            e,
            t: Instant::now(),
            wall,
            ops: Vec::new(),
            sent: Vec::new(),
            next_conn: 0,
            credentials: HashMap::new(),
        }
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

    fn try_submit(&mut self, spec: SweepSpec) -> Result<SweepId, Refused> {
        let (tx, mut rx) = oneshot::channel();
        self.step(Input::Control(ControlCmd::Submit(Box::new(spec), tx)));
        rx.try_recv().expect("reply")
    }

    fn submit(&mut self, spec: SweepSpec) -> SweepId {
        self.try_submit(spec).expect("accepted")
    }

    /// Registers without a name (records then name the worker by its public id); the credential, or why not.
    fn register(&mut self, hosts: Vec<(Site, Version)>, slots: u32, previous: Option<&str>) -> Result<String, Refused> {
        self.register_named("", hosts, slots, previous)
    }

    fn register_named(
        &mut self,
        name: &str,
        hosts: Vec<(Site, Version)>,
        slots: u32,
        previous: Option<&str>,
    ) -> Result<String, Refused> {
        let (tx, mut rx) = oneshot::channel();
        let previous = previous.map(String::from);
        self.step(Input::Register { name: name.into(), hosts, simulated: false, slots, previous, reply: tx });
        let credential = rx.try_recv().expect("answered after the commit")?;
        let (id, _) = credential.split_once('.').expect("a credential is <id>.<secret>");
        self.credentials.insert(id.to_string(), credential.clone());
        Ok(credential)
    }

    /// Registers and connects a worker; its public id and session.
    fn worker(&mut self, hosts: Vec<(Site, Version)>, slots: u32) -> (String, u64) {
        let credential = self.register(hosts, slots, None).expect("registered");
        let id = credential.split_once('.').map(|(id, _)| id.to_string()).expect("public id");
        let conn = self.connect(&id, vec![], slots);
        (id, conn)
    }

    /// A hello with `credential`; the public id it proves, or why not.
    fn hello(&mut self, credential: &str, running: Vec<AttemptKey>, free_slots: u32) -> (Result<String, Refused>, u64) {
        self.next_conn += 1;
        let (tx, _rx) = mpsc::channel(16);
        let conn = Conn { id: self.next_conn, tx };
        let (reply, mut answer) = oneshot::channel();
        self.step(Input::Connect { credential: credential.into(), conn, running, free_slots, reply });
        (answer.try_recv().expect("answered at once"), self.next_conn)
    }

    /// Connects a worker registered through the harness, by its public id.
    fn connect(&mut self, id: &str, running: Vec<AttemptKey>, free_slots: u32) -> u64 {
        let credential = self.credentials[id].clone();
        let (proved, conn) = self.hello(&credential, running, free_slots);
        assert_eq!(proved.as_deref(), Ok(id), "the credential proves its id");
        conn
    }

    fn rejects(&mut self, worker: &str) -> Vec<(AttemptKey, String)> {
        let mut out = Vec::new();
        self.sent.retain(|(w, m)| match m {
            Outbound::Reject(k, r) if w == worker => {
                out.push((k.clone(), r.clone()));
                false
            }
            _ => true,
        });
        out
    }

    /// What a restarted coordinator would load from the writes so far.
    fn stored_rows(&self) -> (Vec<SweepRows>, Vec<WorkerRow>) {
        let mut sweeps: BTreeMap<SweepId, SweepRows> = BTreeMap::new();
        let mut records: BTreeMap<AttemptKey, StoredRecord> = BTreeMap::new();
        let mut attempts: BTreeMap<AttemptKey, crate::store::AttemptRow> = BTreeMap::new();
        let mut workers: BTreeMap<String, WorkerRow> = BTreeMap::new();
        for op in &self.ops {
            match op {
                StoreOp::CreateSweep(m, u) => {
                    let rows = SweepRows {
                        meta: m.clone(),
                        units: u.clone(),
                        attempts: vec![],
                        records: vec![],
                        trajectories: vec![],
                    };
                    sweeps.insert(m.id.clone(), rows);
                }
                StoreOp::Sweep(m) => {
                    if let Some(r) = sweeps.get_mut(&m.id) {
                        r.meta = m.clone();
                    }
                }
                StoreOp::Attempt(k, a) => {
                    attempts.insert(k.clone(), a.clone());
                }
                StoreOp::Record(k, r) => {
                    records.insert(k.clone(), r.clone());
                }
                StoreOp::Worker(w) => {
                    workers.insert(w.id.clone(), w.clone());
                }
                StoreOp::ForgetWorker(id) => {
                    workers.remove(id);
                }
                // Not part of the engine's state: read by the viewer and exports only.
                StoreOp::Trajectory(..) => {}
            }
        }
        for (k, a) in attempts {
            if let Some(r) = sweeps.get_mut(k.sweep.as_str()) {
                r.attempts.push((k, a));
            }
        }
        for (k, rec) in records {
            if let Some(r) = sweeps.get_mut(k.sweep.as_str()) {
                r.records.push((k, rec));
            }
        }
        (sweeps.into_values().collect(), workers.into_values().collect())
    }

    /// A new engine rebuilt from the writes so far, as after a kill -9.
    fn restarted(&self) -> Harness {
        let (sweeps, workers) = self.stored_rows();
        let mut h = Harness::new();
        h.t = self.t;
        h.e.restore(sweeps, h.t);
        h.e.restore_workers(workers, h.t);
        h.credentials = self.credentials.clone();
        h
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
        let s = &self.e.sweeps[self.e.by_id[key.sweep.as_str()]];
        let unit = s.units[key.unit as usize];
        let mut r = Record::new(unit.uid(), unit.condition);
        r.outcome = Some(outcome);
        r.success = (outcome != Outcome::Error).then_some(outcome == Outcome::Success);
        r.error = error.map(String::from);
        r.attempt = Some(key.attempt);
        r.rep = Some(unit.rep);
        r
    }

    fn status(&mut self, id: &SweepId) -> SweepStatus {
        let (tx, mut rx) = oneshot::channel();
        self.step(Input::Control(ControlCmd::Get(id.clone(), tx)));
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
fn records_carry_the_name_the_worker_registered_with() {
    let mut h = Harness::new();
    h.submit(spec(0));
    let credential = h.register_named("wA", all_hosts(), 1, None).expect("registered");
    let id = credential.split_once('.').map(|(id, _)| id.to_string()).expect("public id");
    let c = h.connect(&id, vec![], 1);
    let k = h.assigned(&id).pop().expect("an assignment");
    let mut rec = h.make_record(&k, Outcome::Success, None);
    rec.worker = Some("claimed-by-the-record".into());
    h.step(Input::Worker { worker: id.clone(), conn: c, event: WorkerEvent::Record(k.clone(), Box::new(rec)) });
    let stored = h.stored(&k).expect("stored");
    assert_eq!(stored.record.worker.as_deref(), Some("wA"), "the --name, not {id} nor what the record said");
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
    let mut h2 = h.restarted();
    assert_eq!(h2.status(&id).units.running, 2);
    let credential = h.credentials[&w].clone();
    let again = h2.register(all_hosts(), 2, Some(&credential));
    assert_eq!(again, Ok(credential), "the worker keeps its identity across the restart");
    let c = h2.connect(&w, vec![keys[0].clone()], 1);
    h2.advance(TTL / 2);
    h2.step(Input::Worker {
        worker: w.clone(),
        conn: c,
        event: WorkerEvent::Heartbeat { running: vec![keys[0].clone()], unavailable: None },
    });
    h2.advance(TTL / 2);
    assert!(h2.stored(&keys[0]).is_none(), "re-attached attempt is not lost");
    let lost = h2.stored(&keys[1]).expect("the other attempt expired");
    assert_eq!(lost.record.error.as_deref(), Some(WORKER_LOST));
    assert_eq!(lost.record.worker.as_deref(), Some(w.as_str()), "lost under the worker the ledger names");
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

fn costly(h: &Harness, k: &AttemptKey, usd: f64) -> Record {
    let mut r = h.make_record(k, Outcome::Failure, None);
    r.cost_usd = Some(usd);
    r
}

#[test]
fn a_spent_cost_budget_stops_the_sweep_cancels_its_running_attempts_and_refuses_resume() {
    let mut h = Harness::new();
    let mut s = spec(2);
    s.cost_budget_usd = Some(0.5);
    let id = h.submit(s);
    let (w, c) = h.worker(all_hosts(), 2);
    // Before any record the expected cost is the whole budget: one attempt runs alone.
    let first = h.assigned(&w);
    assert_eq!(first.len(), 1);
    let r = costly(&h, &first[0], 0.1);
    h.step(Input::Worker { worker: w.clone(), conn: c, event: WorkerEvent::Record(first[0].clone(), Box::new(r)) });
    let st = h.status(&id);
    assert_eq!(st.state, SweepState::Running, "0.10 of 0.50 spent: the sweep goes on");
    assert!((st.cost_usd - 0.1).abs() < 1e-9);
    assert_eq!(st.stopped, None);
    // $0.10 an attempt is expected now: both slots fill.
    h.step(Input::Worker { worker: w.clone(), conn: c, event: WorkerEvent::Ready(1) });
    let keys = h.assigned(&w);
    assert_eq!(keys.len(), 2);
    // One costs far more than expected and crosses the budget: nothing more is assigned, the other is cancelled.
    let r = costly(&h, &keys[0], 0.45);
    h.step(Input::Worker { worker: w.clone(), conn: c, event: WorkerEvent::Record(keys[0].clone(), Box::new(r)) });
    let st = h.status(&id);
    assert_eq!(st.state, SweepState::Cancelled);
    assert_eq!(st.stopped.as_deref(), Some("cost budget of $0.50 reached ($0.55 spent)"));
    assert!(h.sent.iter().any(|(to, m)| to == &w && matches!(m, Outbound::Cancel(k) if *k == keys[1])));
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
fn each_assignment_reserves_its_expected_cost_so_the_attempts_in_flight_fit_the_budget() {
    let mut h = Harness::new();
    let mut s = spec(2);
    s.cost_budget_usd = Some(1.0);
    s.families = BTreeMap::from([(Site::Gitlab, vec![0, 1, 2, 3])]);
    let id = h.submit(s);
    let (w, c) = h.worker(all_hosts(), 4);
    let first = h.assigned(&w);
    assert_eq!(first.len(), 1, "no cost known yet: the prior is the whole budget");
    assert!((h.e.sweeps[0].reserved_usd() - 1.0).abs() < 1e-9);
    let r = costly(&h, &first[0], 0.3);
    h.step(Input::Worker { worker: w.clone(), conn: c, event: WorkerEvent::Record(first[0].clone(), Box::new(r)) });
    // $0.30 spent, the dearest attempt cost $0.30: two more fit ($0.90), a third would not.
    h.step(Input::Worker { worker: w.clone(), conn: c, event: WorkerEvent::Ready(1) });
    let keys = h.assigned(&w);
    assert_eq!(keys.len(), 2, "4 free slots, but the budget holds 2 attempts in flight");
    assert!((h.e.sweeps[0].reserved_usd() - 0.6).abs() < 1e-9);
    let mut spent = 0.3;
    for (k, usd) in keys.iter().zip([0.3, 0.35]) {
        let r = costly(&h, k, usd);
        h.step(Input::Worker { worker: w.clone(), conn: c, event: WorkerEvent::Record(k.clone(), Box::new(r)) });
        spent += usd;
    }
    // $0.95 spent, nothing running, the dearest attempt cost $0.35: another would pass the budget, so the sweep stops.
    let st = h.status(&id);
    assert!((st.cost_usd - spent).abs() < 1e-9);
    assert!(st.cost_usd <= 1.0, "never past the budget: {}", st.cost_usd);
    assert_eq!(st.state, SweepState::Cancelled);
    assert_eq!(
        st.stopped.as_deref(),
        Some(
            "cost budget of $1.00 reached ($0.9500 spent; an attempt is expected to cost $0.3500, more than the \
             $0.0500 left)"
        )
    );
    assert_eq!(h.e.sweeps[0].reserved_usd(), 0.0, "every reservation was released");
    h.step(Input::Worker { worker: w.clone(), conn: c, event: WorkerEvent::Ready(4) });
    assert!(h.assigned(&w).is_empty());
    let (tx, mut rx) = oneshot::channel();
    h.step(Input::Control(ControlCmd::Resume(id.clone(), tx)));
    assert_eq!(rx.try_recv().expect("reply").expect("known sweep").state, SweepState::Cancelled);
}

#[test]
fn a_lost_attempt_gives_back_its_reservation() {
    let mut h = Harness::new();
    let mut s = spec(2);
    s.cost_budget_usd = Some(1.0);
    h.submit(s);
    let (w, c) = h.worker(all_hosts(), 2);
    let first = h.assigned(&w);
    let r = costly(&h, &first[0], 0.2);
    h.step(Input::Worker { worker: w.clone(), conn: c, event: WorkerEvent::Record(first[0].clone(), Box::new(r)) });
    h.step(Input::Worker { worker: w.clone(), conn: c, event: WorkerEvent::Ready(1) });
    assert_eq!(h.assigned(&w).len(), 2);
    assert!((h.e.sweeps[0].reserved_usd() - 0.4).abs() < 1e-9);
    // The worker goes silent: its attempts end without records and their reservations are free again.
    h.advance(TTL * 4);
    assert_eq!(h.e.sweeps[0].reserved_usd(), 0.0);
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
    let (rows, _) = h.stored_rows();
    let mut e = Engine::new(TTL, ManualClock::at(WALL_START_MS), SequentialIds::default());
    e.restore(rows, h.t);
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
    assert_eq!(h.credentials[&w], format!("w-000000000002.{:032x}", 1), "the credential is <id>.<secret>");
    let k = h.assigned(&w).pop().expect("assignment");
    let started = h.ops.iter().find_map(|op| match op {
        StoreOp::Attempt(key, row) if *key == k => Some(row.started_ms),
        _ => None,
    });
    assert_eq!(started, Some(WALL_START_MS + 1_500));
}

#[test]
fn a_record_from_a_worker_that_does_not_hold_the_lease_is_refused_and_the_holders_own_is_stored() {
    let mut h = Harness::new();
    let id = h.submit(spec(2));
    let (holder, hc) = h.worker(all_hosts(), 1);
    let k = h.assigned(&holder).pop().expect("an assignment");
    // Another token holder registers and forges a well-formed record for the attempt.
    let (forger, fc) = h.worker(vec![(Site::Magento, Version::V1)], 1);
    let before = h.ops.len();
    h.record(&forger, fc, &k, Outcome::Success, None);
    assert_eq!(h.ops.len(), before, "nothing stored");
    assert!(h.acks(&forger).is_empty());
    let rejected = h.rejects(&forger);
    assert_eq!(rejected, vec![(k.clone(), format!("attempt 0 of unit {} was not leased to this worker", k.unit))]);
    // The holder's own record is then stored, not dropped as "already durable".
    h.record(&holder, hc, &k, Outcome::Failure, None);
    assert_eq!(h.acks(&holder), vec![k.clone()]);
    let stored = h.stored(&k).expect("stored");
    assert_eq!(stored.record.outcome, Some(Outcome::Failure));
    assert_eq!(stored.record.worker.as_deref(), Some(holder.as_str()));
    // A forged resend of the stored record is refused too, and changes nothing.
    h.record(&forger, fc, &k, Outcome::Success, None);
    assert_eq!(h.rejects(&forger).len(), 1);
    assert!(h.acks(&forger).is_empty());
    h.step(Input::Worker { worker: forger.clone(), conn: fc, event: WorkerEvent::AckRequest(vec![k.clone()]) });
    assert!(h.acks(&forger).is_empty(), "another worker's attempt is not acknowledged to it");
    assert_eq!(h.status(&id).cells.iter().map(|c| c.successes).sum::<u64>(), 0);
}

#[test]
fn a_late_record_of_a_lost_attempt_is_accepted_only_from_the_worker_that_held_it() {
    let mut h = Harness::new();
    h.submit(spec(2));
    let (w1, c1) = h.worker(all_hosts(), 1);
    let k0 = h.assigned(&w1).pop().expect("assignment");
    h.step(Input::Disconnect { worker: w1.clone(), conn: c1 });
    assert_eq!(h.stored(&k0).and_then(|r| r.record.error.clone()).as_deref(), Some(WORKER_LOST));
    let (w2, c2) = h.worker(all_hosts(), 1);
    let _retry = h.assigned(&w2);
    h.record(&w2, c2, &k0, Outcome::Success, None);
    assert_eq!(h.rejects(&w2).len(), 1, "the lost attempt was not w2's");
    assert!(h.stored(&k0).expect("placeholder").synthetic);
    let c1 = h.connect(&w1, vec![], 0);
    h.record(&w1, c1, &k0, Outcome::Success, None);
    assert_eq!(h.acks(&w1), vec![k0.clone()]);
    assert!(!h.stored(&k0).expect("late record").synthetic);
}

#[test]
fn another_workers_id_cannot_be_taken_without_its_secret() {
    let mut h = Harness::new();
    let (victim, _) = h.worker(all_hosts(), 1);
    let credential = h.credentials[&victim].clone();
    // Register{previous_id} with the public id (what `sweep workers` shows), or a wrong secret: a new identity.
    for previous in [victim.clone(), format!("{victim}.{:032x}", 99), format!("{victim}.")] {
        let got = h.register(all_hosts(), 1, Some(&previous)).expect("registered");
        assert!(!got.starts_with(&format!("{victim}.")), "{previous} took {got}");
    }
    // A hello naming the victim without its secret is refused, naming only the public id.
    for forged in [victim.clone(), format!("{victim}.{:032x}", 99)] {
        let (proved, _) = h.hello(&forged, vec![], 1);
        assert_eq!(
            proved,
            Err(Refused::NotRegistered(format!(
                "worker id '{victim}' is not registered here or its secret does not match: register again"
            )))
        );
    }
    // The victim itself keeps its identity.
    assert_eq!(h.register(all_hosts(), 1, Some(&credential)), Ok(credential.clone()));
    assert_eq!(h.hello(&credential, vec![], 1).0, Ok(victim));
}

#[test]
fn after_a_restart_only_the_former_holder_re_attaches_an_orphan() {
    let mut h = Harness::new();
    h.submit(spec(2));
    let (a, _) = h.worker(all_hosts(), 1);
    let k = h.assigned(&a).pop().expect("assignment");
    let (b, _) = h.worker(all_hosts(), 1);
    let _ = h.assigned(&b);
    let mut h2 = h.restarted();
    // b names a's running attempt: not attached; a does: attached.
    let cb = h2.connect(&b, vec![k.clone()], 0);
    let ca = h2.connect(&a, vec![k.clone()], 0);
    h2.advance(TTL);
    h2.step(Input::Worker {
        worker: a.clone(),
        conn: ca,
        event: WorkerEvent::Heartbeat { running: vec![k.clone()], unavailable: None },
    });
    h2.record(&b, cb, &k, Outcome::Success, None);
    assert_eq!(h2.rejects(&b).len(), 1);
    h2.record(&a, ca, &k, Outcome::Failure, None);
    assert_eq!(h2.acks(&a), vec![k.clone()]);
    assert_eq!(h2.stored(&k).map(|r| r.record.outcome), Some(Some(Outcome::Failure)));
}

#[test]
fn idle_registrations_expire_and_a_full_registry_forgets_the_oldest_idle_one() {
    let expiry = Duration::from_secs(600);
    let mut h = Harness::with_limits(Limits { worker_expiry: expiry, max_workers: 3, ..Limits::default() });
    let (connected, _) = h.worker(all_hosts(), 1);
    let idle = h.register(all_hosts(), 1, None).expect("registered");
    h.advance(Duration::from_secs(1));
    let newer = h.register(all_hosts(), 1, None).expect("registered");
    // Full: a fourth registration forgets the idle worker heard from longest ago.
    let fourth = h.register(all_hosts(), 1, None).expect("room made");
    let listed: Vec<String> = h.e.worker_list(h.t).into_iter().map(|w| w.id).collect();
    let public = |c: &str| c.split_once('.').map(|(id, _)| id.to_string()).expect("id");
    assert_eq!(listed, vec![connected.clone(), public(&newer), public(&fourth)]);
    assert!(h.ops.iter().any(|op| matches!(op, StoreOp::ForgetWorker(id) if *id == public(&idle))));
    // The forgotten credential no longer proves anything.
    assert!(matches!(h.hello(&idle, vec![], 1).0, Err(Refused::NotRegistered(_))));
    // Past the expiry the idle ones go; the connected one stays.
    h.advance(expiry);
    let listed: Vec<String> = h.e.worker_list(h.t).into_iter().map(|w| w.id).collect();
    assert_eq!(listed, vec![connected.clone()]);
    // Full of workers that are not idle: refused, not evicted.
    let mut h = Harness::with_limits(Limits { max_workers: 1, ..Limits::default() });
    let (only, _) = h.worker(all_hosts(), 1);
    let refused = h.register(all_hosts(), 1, None);
    assert_eq!(
        refused,
        Err(Refused::Full("1 workers are registered, the limit (--max-workers), and none is idle".into()))
    );
    assert_eq!(h.e.worker_list(h.t).len(), 1, "{only} stays");
}

#[test]
fn a_worker_holding_a_lease_or_an_orphan_is_not_forgotten() {
    let expiry = Duration::from_secs(5);
    let mut h = Harness::with_limits(Limits { worker_expiry: expiry, ..Limits::default() });
    h.submit(spec(2));
    let (w, _) = h.worker(all_hosts(), 1);
    let k = h.assigned(&w).pop().expect("assignment");
    // After a restart the worker is not connected, but its orphan waits for it.
    let mut h2 = h.restarted();
    h2.e.limits.worker_expiry = expiry;
    h2.advance(expiry);
    assert_eq!(h2.e.worker_list(h2.t).len(), 1, "kept while its orphan lease waits");
    h2.advance(TTL);
    assert_eq!(h2.stored(&k).and_then(|r| r.record.error.clone()).as_deref(), Some(WORKER_LOST));
    h2.advance(Duration::from_millis(1));
    assert!(h2.e.worker_list(h2.t).is_empty(), "forgotten once nothing waits for it");
}

#[test]
fn credits_from_the_network_saturate_at_the_slots() {
    let mut h = Harness::new();
    h.submit(spec(2));
    let (w, c) = h.worker(all_hosts(), 3);
    assert_eq!(h.assigned(&w).len(), 3);
    // `credits + n` would overflow (a panic in debug, a wrap in release).
    h.step(Input::Worker { worker: w.clone(), conn: c, event: WorkerEvent::Ready(u32::MAX) });
    h.step(Input::Worker { worker: w.clone(), conn: c, event: WorkerEvent::Ready(u32::MAX) });
    assert_eq!(h.assigned(&w).len(), 1, "the last queued unit; never more than the slots");
    assert!(h.e.workers[&w].credits <= 3);
}

#[test]
fn a_record_too_large_is_refused_and_its_attempt_ends_as_an_error_that_is_retried() {
    let mut h = Harness::new();
    let id = h.submit(spec(2));
    let (w, c) = h.worker(all_hosts(), 1);
    let k = h.assigned(&w).pop().expect("assignment");
    let (other, oc) = h.worker(all_hosts(), 1);
    let _ = h.assigned(&other);
    h.step(Input::Worker { worker: other.clone(), conn: oc, event: WorkerEvent::RecordTooLarge(k.clone(), 5 << 20) });
    assert!(h.stored(&k).is_none(), "not the other worker's attempt to end");
    assert_eq!(h.rejects(&other).len(), 1);
    h.step(Input::Worker { worker: w.clone(), conn: c, event: WorkerEvent::RecordTooLarge(k.clone(), 5 << 20) });
    assert_eq!(h.rejects(&w), vec![(k.clone(), "record too large: 5242880 bytes, the limit is 4194304 bytes".into())]);
    let stored = h.stored(&k).expect("the attempt ends");
    assert!(stored.synthetic);
    assert_eq!(stored.record.error.as_deref(), Some(RECORD_TOO_LARGE));
    assert_eq!(stored.record.worker.as_deref(), Some(w.as_str()));
    h.step(Input::Worker { worker: w.clone(), conn: c, event: WorkerEvent::Ready(1) });
    let retry = h.assigned(&w).into_iter().chain(h.assigned(&other)).find(|x| x.unit == k.unit);
    assert_eq!(retry.map(|r| r.attempt), Some(1), "its unit runs again");
    assert_eq!(h.status(&id).attempts.error, 1);
}

#[test]
fn sweeps_past_the_limits_are_refused_and_the_engine_goes_on() {
    let limits = Limits { max_units_per_sweep: 4, max_sweeps: 2, max_units_total: 6, ..Limits::default() };
    let mut h = Harness::with_limits(limits);
    let mut big = spec(2);
    big.count = 1_000;
    assert_eq!(
        h.try_submit(big),
        Err(Refused::Invalid(
            "invalid sweep spec: the sweep has 4000 units (4 per rep x count 1000); \
             the limit is 4 units per sweep (--max-units-per-sweep)"
                .into()
        ))
    );
    let first = h.submit(spec(2));
    assert_eq!(
        h.try_submit(spec(2)),
        Err(Refused::Full("the sweep's 4 units and the 4 held would pass the limit of 6 units in all sweeps".into()))
    );
    let mut small = spec(2);
    small.families = BTreeMap::from([(Site::Gitlab, vec![0])]);
    h.submit(small.clone());
    assert_eq!(
        h.try_submit(small),
        Err(Refused::Full("the coordinator holds 2 sweeps, the limit (--max-sweeps)".into()))
    );
    assert_eq!(h.status(&first).units.total, 4, "the engine still answers");
}

#[test]
fn a_trajectory_is_stored_and_acked_only_from_its_holder_and_under_its_own_key() {
    use skillshift_common::trajectory::Key;
    let mut h = Harness::new();
    h.submit(spec(2));
    let (w, c) = h.worker(all_hosts(), 1);
    let k = h.assigned(&w).pop().expect("assignment");
    let (other, oc) = h.worker(all_hosts(), 1);
    let _ = h.assigned(&other);
    let s = &h.e.sweeps[h.e.by_id[k.sweep.as_str()]];
    let spec = crate::planner::attempt_spec(
        &s.meta.id,
        &s.meta.spec,
        &s.meta.config_digest,
        &s.units[k.unit as usize],
        k.attempt,
    );
    let named = Key::for_attempt(&spec);
    let row = crate::store::TrajectoryRow { blob_sha256: "ab".repeat(32), bytes: 3 };
    let t = std::sync::Arc::new(crate::store::StoredTrajectory { compressed: vec![1, 2, 3], screenshots: vec![], row });
    let trajectories = |h: &Harness| h.ops.iter().filter(|op| matches!(op, StoreOp::Trajectory(..))).count();
    let replies = |h: &mut Harness, who: &str| {
        let mut out = Vec::new();
        h.sent.retain(|(x, m)| match m {
            Outbound::TrajectoryAck(key) if x == who => {
                out.push(format!("ack {}", key.unit));
                false
            }
            Outbound::TrajectoryReject(key, reason, _) if x == who => {
                out.push(format!("reject {}: {reason}", key.unit));
                false
            }
            _ => true,
        });
        out
    };

    let event =
        |key: &AttemptKey, named: &Key| WorkerEvent::Trajectory(key.clone(), Box::new(named.clone()), t.clone());
    h.step(Input::Worker { worker: other.clone(), conn: oc, event: event(&k, &named) });
    assert_eq!(trajectories(&h), 0);
    assert_eq!(
        replies(&mut h, &other),
        vec![format!("reject {}: attempt 0 of unit {} was not leased to this worker", k.unit, k.unit)]
    );

    let mut wrong = named.clone();
    wrong.rep += 1;
    h.step(Input::Worker { worker: w.clone(), conn: c, event: event(&k, &wrong) });
    assert_eq!(trajectories(&h), 0);
    assert!(replies(&mut h, &w).iter().all(|r| r.starts_with("reject") && r.contains("not its attempt's")));

    h.step(Input::Worker { worker: w.clone(), conn: c, event: event(&k, &named) });
    assert_eq!(trajectories(&h), 1, "stored once it is its holder's, under its own key");
    assert_eq!(replies(&mut h, &w), vec![format!("ack {}", k.unit)]);

    // The same blob again: acknowledged, nothing more stored. Another blob for the attempt: refused.
    h.step(Input::Worker { worker: w.clone(), conn: c, event: event(&k, &named) });
    assert_eq!(trajectories(&h), 1, "a re-upload stores nothing");
    assert_eq!(replies(&mut h, &w), vec![format!("ack {}", k.unit)]);
    let mut other_blob = (*t).clone();
    other_blob.row.blob_sha256 = "cd".repeat(32);
    let e2 = WorkerEvent::Trajectory(k.clone(), Box::new(named.clone()), std::sync::Arc::new(other_blob));
    h.step(Input::Worker { worker: w.clone(), conn: c, event: e2 });
    assert_eq!(trajectories(&h), 1);
    assert_eq!(
        replies(&mut h, &w),
        vec![format!(
            "reject {}: attempt 0 of unit {} already has a trajectory, from another blob; an attempt keeps one",
            k.unit, k.unit
        )]
    );
}

/// What [`Input::UploadCheck`] answers.
fn upload_check(h: &mut Harness, worker: &str, key: &AttemptKey, blob: Option<u64>) -> Result<Upload, String> {
    let (reply, mut rx) = tokio::sync::oneshot::channel();
    h.step(Input::UploadCheck { worker: worker.to_string(), key: key.clone(), blob, reply });
    rx.try_recv().expect("answered at once").map_err(|e| e.to_string())
}

#[test]
fn an_upload_is_checked_against_its_holder_its_stored_blob_and_the_sweeps_quota_before_it_is_taken() {
    use skillshift_common::trajectory::Key;
    let limits = Limits { max_trajectory_bytes_per_sweep: 100, ..Limits::default() };
    let mut h = Harness::with_limits(limits);
    h.submit(spec(1));
    let (w, c) = h.worker(all_hosts(), 2);
    let mut keys = h.assigned(&w);
    assert_eq!(keys.len(), 2, "two slots, two attempts");
    let (k2, k) = (keys.pop().expect("two"), keys.pop().expect("assignments"));
    let (other, _) = h.worker(all_hosts(), 1);
    let not_leased = format!("attempt 0 of unit {} was not leased to this worker", k.unit);
    assert_eq!(upload_check(&mut h, &other, &k, None), Err(not_leased.clone()), "a non-holder, before any byte");
    assert_eq!(upload_check(&mut h, &other, &k, Some(7)), Err(not_leased));
    let never = AttemptKey { attempt: 5, ..k.clone() };
    assert!(upload_check(&mut h, &w, &never, None).expect_err("never assigned").contains("never assigned"));
    assert_eq!(upload_check(&mut h, &w, &k, None), Ok(Upload::New));

    // The holder stores a blob of 60 bytes: the same blob is `Same`, another refused.
    let s = &h.e.sweeps[h.e.by_id[k.sweep.as_str()]];
    let spec_of = |key: &AttemptKey| {
        crate::planner::attempt_spec(
            &s.meta.id,
            &s.meta.spec,
            &s.meta.config_digest,
            &s.units[key.unit as usize],
            key.attempt,
        )
    };
    let (named, named2) = (Key::for_attempt(&spec_of(&k)), Key::for_attempt(&spec_of(&k2)));
    let stored = |sha: &str, bytes: u64| {
        let row = crate::store::TrajectoryRow { blob_sha256: sha.repeat(32), bytes };
        std::sync::Arc::new(crate::store::StoredTrajectory { compressed: vec![0; 4], screenshots: vec![], row })
    };
    let ev = WorkerEvent::Trajectory(k.clone(), Box::new(named), stored("ab", 60));
    h.step(Input::Worker { worker: w.clone(), conn: c, event: ev });
    let id = blob_id(&"ab".repeat(32));
    assert_eq!(upload_check(&mut h, &w, &k, Some(id)), Ok(Upload::Same));
    assert!(upload_check(&mut h, &w, &k, Some(id + 1)).expect_err("another blob").contains("already has a trajectory"));

    // 60 of 100 bytes used: the next attempt's 50 bytes are refused, naming the numbers.
    h.sent.clear();
    let ev = WorkerEvent::Trajectory(k2.clone(), Box::new(named2), stored("ef", 50));
    h.step(Input::Worker { worker: w.clone(), conn: c, event: ev });
    let refused: Vec<String> = h
        .sent
        .iter()
        .filter_map(|(_, m)| match m {
            Outbound::TrajectoryReject(_, reason, _) => Some(reason.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(
        refused,
        vec![format!(
            "sweep '{}' stores 60 bytes of trajectories; 50 more would pass its quota of 100 bytes \
             (--max-trajectory-bytes-per-sweep)",
            k.sweep
        )]
    );
    assert_eq!(h.ops.iter().filter(|op| matches!(op, StoreOp::Trajectory(..))).count(), 1);
}

#[test]
fn a_lost_workers_attempt_is_recorded_with_the_worker_lost_category() {
    let mut h = Harness::new();
    h.submit(spec(2));
    let (w, _c) = h.worker(all_hosts(), 1);
    let k = h.assigned(&w).pop().expect("assignment");
    h.e.end_without_record(&k, WORKER_LOST);
    // Any next input collects the writes.
    h.step(Input::Tick);
    let stored = h.stored(&k).expect("recorded");
    assert_eq!(stored.record.failure_category.as_deref(), Some("worker_lost"));
}

#[test]
fn queued_units_no_worker_hosts_are_named_and_leave_no_eta() {
    let mut h = Harness::new();
    let id = h.submit(spec(2));
    let (w, c) = h.worker(vec![(Site::Gitlab, Version::V1)], 2);
    let first = h.assigned(&w);
    assert_eq!(first.len(), 2, "the two v1 units run");
    let st = h.status(&id);
    let expected = [crate::status::Unrunnable { site: Site::Gitlab, version: Version::V2, queued: 2 }];
    assert_eq!(st.unrunnable, expected);
    assert_eq!(st.unrunnable_line().as_deref(), Some("no worker can run 2 queued units (gitlab v2)"));
    h.t += Duration::from_secs(5);
    for k in &first {
        h.record(&w, c, k, Outcome::Success, None);
    }
    let st = h.status(&id);
    assert_eq!(st.state, SweepState::Running);
    assert_eq!(st.eta_ms, None, "no ETA while units wait for a worker that is not there");
    assert_eq!(st.to_json()["unrunnable"][0]["queued"], 2);
    let round = crate::wire::status_from_wire(crate::wire::status_to_wire(&st)).expect("round trip");
    assert_eq!(round.unrunnable, st.unrunnable);
    // A worker that hosts v2 arrives: nothing is unrunnable any more.
    let _ = h.worker(all_hosts(), 2);
    let st = h.status(&id);
    assert!(st.unrunnable.is_empty() && st.unrunnable_line().is_none(), "{:?}", st.unrunnable);
}
