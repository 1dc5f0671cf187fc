//! The terminal view of a running sweep: a header (state, workers, ETA) and
//! one progress bar per cell. Drawn only when stderr is a terminal.

use std::collections::BTreeMap;
use std::io::IsTerminal;
use std::time::Duration;

use skillshift_common::{Condition, Site};
use skillshift_coordinator::status::SweepStatus;

/// Whether progress bars should be drawn (stderr is a terminal).
pub fn interactive() -> bool {
    std::io::stderr().is_terminal()
}

/// The terminal view: a header (state, workers, ETA) and one bar per cell.
pub struct Bars {
    _multi: indicatif::MultiProgress,
    header: indicatif::ProgressBar,
    cells: BTreeMap<(Site, Condition), indicatif::ProgressBar>,
}

impl Default for Bars {
    fn default() -> Self {
        Bars::new()
    }
}

impl Bars {
    pub fn new() -> Bars {
        let multi = indicatif::MultiProgress::new();
        let header = multi.add(indicatif::ProgressBar::new_spinner());
        header.set_style(
            indicatif::ProgressStyle::with_template("{spinner} {msg}")
                .unwrap_or_else(|_| indicatif::ProgressStyle::default_spinner()),
        );
        header.enable_steady_tick(Duration::from_millis(200));
        let style = indicatif::ProgressStyle::with_template("  {prefix:<20} [{bar:30}] {pos:>4}/{len:<4} {msg}")
            .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar())
            .progress_chars("=> ");
        let mut cells = BTreeMap::new();
        for site in Site::ALL {
            for cond in Condition::ALL {
                let bar = multi.add(indicatif::ProgressBar::new(0));
                bar.set_style(style.clone());
                bar.set_prefix(format!("{site:<9} {cond}"));
                cells.insert((*site, *cond), bar);
            }
        }
        Bars { _multi: multi, header, cells }
    }

    pub fn draw(&self, st: &SweepStatus, workers: Option<usize>) {
        let eta = match (st.unrunnable_line(), st.eta_ms) {
            (Some(line), _) => line,
            (None, Some(ms)) => format!("ETA {}", fmt_duration(ms)),
            (None, None) => "ETA -".into(),
        };
        let workers = workers.map(|w| w.to_string()).unwrap_or_else(|| "?".into());
        self.header.set_message(format!(
            "{}  {}  {}/{} units  {} running  {} invalid  workers {}  {}",
            st.id,
            st.state.as_str(),
            st.units.done + st.units.invalid,
            st.units.total,
            st.units.running,
            st.units.invalid,
            workers,
            eta
        ));
        for c in &st.cells {
            if let Some(bar) = self.cells.get(&(c.site, c.condition)) {
                bar.set_length(c.total);
                bar.set_position(c.done + c.invalid);
                bar.set_message(format!("{} ok, {} running, {} invalid", c.successes, c.running, c.invalid));
            }
        }
    }

    pub fn finish(self) {
        self.header.finish_and_clear();
        for bar in self.cells.values() {
            bar.abandon();
        }
    }
}

pub fn fmt_duration(ms: u64) -> String {
    let s = ms / 1000;
    if s >= 3600 {
        format!("{}h{:02}m", s / 3600, (s % 3600) / 60)
    } else if s >= 60 {
        format!("{}m{:02}s", s / 60, s % 60)
    } else {
        format!("{s}s")
    }
}
