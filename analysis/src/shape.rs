//! The shapes every part of the analysis shares: a value per website
//! ([`PerSite`]), per condition ([`PerCondition`]) and per cell ([`Grid`]),
//! the ten numbers of one metric ([`TenNumbers`]), the macro means that make
//! them ([`marginals`]) and an interval beside a value ([`Pair`]). A leaf:
//! it names no other module of the crate, so the rooms that compute (cells,
//! ledger, reliability, intervals, failures) and the one that assembles them
//! (summary) all build on it.
//!
//! Marginals are unweighted means of cells, never weighted by task count; a
//! null cell is left out, and a mean over no cell is null.

use serde::{Deserialize, Serialize};

use skillshift_common::ids::{Condition, Site};

/// An interval as `[lo, hi]`, in the unit of the value it goes beside.
pub type Pair = [f64; 2];

/// One value per website, in table order.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct PerSite<T> {
    pub gitlab: T,
    pub magento: T,
    pub wordpress: T,
}

impl<T> PerSite<T> {
    pub fn from_fn(mut f: impl FnMut(Site) -> T) -> Self {
        PerSite { gitlab: f(Site::Gitlab), magento: f(Site::Magento), wordpress: f(Site::Wordpress) }
    }

    pub fn get(&self, site: Site) -> &T {
        match site {
            Site::Gitlab => &self.gitlab,
            Site::Magento => &self.magento,
            Site::Wordpress => &self.wordpress,
        }
    }

    pub fn get_mut(&mut self, site: Site) -> &mut T {
        match site {
            Site::Gitlab => &mut self.gitlab,
            Site::Magento => &mut self.magento,
            Site::Wordpress => &mut self.wordpress,
        }
    }
}

/// One value per condition, in table order.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct PerCondition<T> {
    pub src: T,
    #[serde(rename = "src-perc")]
    pub src_perc: T,
    #[serde(rename = "src-exec")]
    pub src_exec: T,
    pub tgt: T,
    #[serde(rename = "tgt-perc")]
    pub tgt_perc: T,
    #[serde(rename = "tgt-exec")]
    pub tgt_exec: T,
}

impl<T> PerCondition<T> {
    pub fn from_fn(mut f: impl FnMut(Condition) -> T) -> Self {
        PerCondition {
            src: f(Condition::Src),
            src_perc: f(Condition::SrcPerc),
            src_exec: f(Condition::SrcExec),
            tgt: f(Condition::Tgt),
            tgt_perc: f(Condition::TgtPerc),
            tgt_exec: f(Condition::TgtExec),
        }
    }

    pub fn get(&self, c: Condition) -> &T {
        match c {
            Condition::Src => &self.src,
            Condition::SrcPerc => &self.src_perc,
            Condition::SrcExec => &self.src_exec,
            Condition::Tgt => &self.tgt,
            Condition::TgtPerc => &self.tgt_perc,
            Condition::TgtExec => &self.tgt_exec,
        }
    }

    pub fn get_mut(&mut self, c: Condition) -> &mut T {
        match c {
            Condition::Src => &mut self.src,
            Condition::SrcPerc => &mut self.src_perc,
            Condition::SrcExec => &mut self.src_exec,
            Condition::Tgt => &mut self.tgt,
            Condition::TgtPerc => &mut self.tgt_perc,
            Condition::TgtExec => &mut self.tgt_exec,
        }
    }
}

/// The ten numbers of one metric.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct TenNumbers {
    pub websites: PerSite<Option<f64>>,
    pub conditions: PerCondition<Option<f64>>,
    pub overall: Option<f64>,
}

impl TenNumbers {
    /// The ten values in table order: three websites, six conditions, overall.
    pub fn values(&self) -> [Option<f64>; 10] {
        let w = &self.websites;
        let c = &self.conditions;
        [w.gitlab, w.magento, w.wordpress, c.src, c.src_perc, c.src_exec, c.tgt, c.tgt_perc, c.tgt_exec, self.overall]
    }
}

/// A value per (site, condition), indexed in table order.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Grid<T>(pub [[T; 6]; 3]);

impl<T: Copy> Grid<T> {
    pub fn get(&self, site: Site, condition: Condition) -> T {
        self.0[site.index()][condition.index()]
    }

    pub fn map<U: Copy + Default>(&self, f: impl Fn(&T) -> U) -> Grid<U> {
        let mut out = [[U::default(); 6]; 3];
        for (s, row) in self.0.iter().enumerate() {
            for (c, v) in row.iter().enumerate() {
                out[s][c] = f(v);
            }
        }
        Grid(out)
    }
}

impl<T: Copy + Default> Default for Grid<T> {
    fn default() -> Self {
        Grid([[T::default(); 6]; 3])
    }
}

/// Unweighted mean of the present values; `None` over no value.
pub fn mean(values: impl IntoIterator<Item = Option<f64>>) -> Option<f64> {
    let (sum, n) = values.into_iter().flatten().fold((0.0, 0u32), |(s, n), v| (s + v, n + 1));
    (n > 0).then(|| sum / n as f64)
}

/// The ten numbers of one metric: website, condition and overall macro means.
pub fn marginals(cells: &Grid<Option<f64>>) -> TenNumbers {
    let websites = PerSite::from_fn(|s| mean(Condition::ALL.iter().map(|&c| cells.get(s, c))));
    let conditions = PerCondition::from_fn(|c| mean(Site::ALL.iter().map(|&s| cells.get(s, c))));
    let overall = mean(cells.0.iter().flat_map(|row| row.iter().copied()));
    TenNumbers { websites, conditions, overall }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn marginals_are_macro_not_task_weighted() {
        let mut g: Grid<Option<f64>> = Grid::default();
        // gitlab cells all 10, magento all 40, wordpress all 100: overall 50 whatever the task counts.
        for (s, v) in [(0, 10.0), (1, 40.0), (2, 100.0)] {
            for c in 0..6 {
                g.0[s][c] = Some(v);
            }
        }
        let t = marginals(&g);
        assert_eq!(t.overall, Some(50.0));
        assert_eq!(t.websites.magento, Some(40.0));
        assert_eq!(t.conditions.src, Some(50.0));
        // A null cell is left out, not counted as 0.
        g.0[0][0] = None;
        let t = marginals(&g);
        assert_eq!(t.websites.gitlab, Some(10.0));
        assert_eq!(t.conditions.src, Some(70.0));
        assert_eq!(marginals(&Grid::default()).overall, None);
    }
}
