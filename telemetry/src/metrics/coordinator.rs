//! The coordinator's metrics: units by state and by cell, active leases,
//! connected workers, records ingested, ingest-to-durable latency, lease
//! expiries and reassignments.

use std::time::Duration;

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{exponential_buckets, Histogram};
use prometheus_client::registry::Registry;

use super::{secs, Exposition};

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct StateLabel {
    state: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct CellLabels {
    sweep: String,
    site: String,
    condition: String,
    state: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct OutcomeLabel {
    outcome: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ReasonLabel {
    reason: String,
}

/// One cell's unit count in one state, for [`CoordinatorMetrics::set_cells`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CellState<'a> {
    pub sweep: &'a str,
    pub site: &'a str,
    pub condition: &'a str,
    /// `queued`, `running`, `done`, `invalid`, `held` (the engine's unit states).
    pub state: &'a str,
    pub units: i64,
}

/// The coordinator's metric handles. Clones share the same series.
#[derive(Clone, Debug)]
pub struct CoordinatorMetrics {
    units: Family<StateLabel, Gauge>,
    cell_units: Family<CellLabels, Gauge>,
    active_leases: Gauge,
    connected_workers: Gauge,
    records_ingested: Family<OutcomeLabel, Counter>,
    ingest_durable: Histogram,
    lease_expiries: Family<ReasonLabel, Counter>,
    reassignments: Counter,
    sweeps_active: Gauge,
}

impl CoordinatorMetrics {
    /// The metrics and the exposition that serves them.
    pub fn new() -> (Self, Exposition) {
        let m = CoordinatorMetrics {
            units: Family::default(),
            cell_units: Family::default(),
            active_leases: Gauge::default(),
            connected_workers: Gauge::default(),
            records_ingested: Family::default(),
            // 0.5 ms .. ~4 s: a group commit is milliseconds; seconds mean the store is in trouble.
            ingest_durable: Histogram::new(exponential_buckets(0.0005, 2.0, 14)),
            lease_expiries: Family::default(),
            reassignments: Counter::default(),
            sweeps_active: Gauge::default(),
        };
        let mut r = Registry::with_prefix("skillshift");
        r.register("units", "Run units by state, all sweeps", m.units.clone());
        r.register("cell_units", "Run units by cell (sweep, site, condition) and state", m.cell_units.clone());
        r.register("active_leases", "Leases currently held by workers", m.active_leases.clone());
        r.register("connected_workers", "Workers with an open stream", m.connected_workers.clone());
        r.register("sweeps_active", "Sweeps not yet finished", m.sweeps_active.clone());
        r.register("records_ingested", "Records accepted into the store, by outcome", m.records_ingested.clone());
        r.register(
            "ingest_durable_seconds",
            "From a record's arrival to its acknowledgement as durable",
            m.ingest_durable.clone(),
        );
        r.register("lease_expiries", "Leases lost, by reason (ttl, stream_closed)", m.lease_expiries.clone());
        r.register("reassignments", "Units returned to the queue as a new attempt", m.reassignments.clone());
        (m, Exposition::new(r))
    }

    /// Replaces the unit counts by state (`queued`, `running`, `done`, `invalid`, `held`).
    pub fn set_units<'a>(&self, by_state: impl IntoIterator<Item = (&'a str, i64)>) {
        self.units.clear();
        for (state, n) in by_state {
            self.units.get_or_create(&StateLabel { state: state.to_string() }).set(n);
        }
    }

    /// Replaces the per-cell unit counts.
    pub fn set_cells<'a>(&self, cells: impl IntoIterator<Item = CellState<'a>>) {
        self.cell_units.clear();
        for c in cells {
            let labels = CellLabels {
                sweep: c.sweep.to_string(),
                site: c.site.to_string(),
                condition: c.condition.to_string(),
                state: c.state.to_string(),
            };
            self.cell_units.get_or_create(&labels).set(c.units);
        }
    }

    pub fn set_active_leases(&self, n: i64) {
        self.active_leases.set(n);
    }

    pub fn set_sweeps_active(&self, n: i64) {
        self.sweeps_active.set(n);
    }

    pub fn set_connected_workers(&self, n: i64) {
        self.connected_workers.set(n);
    }

    /// A record stored durably: its outcome and the time from arrival to durable.
    pub fn record_ingested(&self, outcome: &str, arrival_to_durable: Duration) {
        self.records_ingested.get_or_create(&OutcomeLabel { outcome: outcome.to_string() }).inc();
        self.ingest_durable.observe(secs(arrival_to_durable));
    }

    /// A lease lost (`ttl`: the worker went silent; `stream_closed`: its stream broke).
    pub fn lease_expired(&self, reason: &str) {
        self.lease_expiries.get_or_create(&ReasonLabel { reason: reason.to_string() }).inc();
    }

    /// A unit queued again as a new attempt.
    pub fn unit_reassigned(&self) {
        self.reassignments.inc();
    }
}
