//! Identifiers of docs/formats.md#identifiers: sites, versions, conditions, uids and families;
//! and the names of a distributed sweep and of one attempt in it.
//!
//! Every enum prints and parses its canonical lowercase spelling, and its
//! `ALL` constant lists the values in the order tables are printed in.

use std::borrow::Borrow;
use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// An unknown identifier: what kind of identifier, and the text that was given
/// (whole here, clipped where it is displayed).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown {kind} '{}' (expected {expected})", crate::text::short(.found))]
pub struct ParseIdError {
    pub kind: &'static str,
    pub found: String,
    pub expected: &'static str,
}

macro_rules! id_enum {
    ($name:ident, $kind:literal, $expected:literal, [$($variant:ident => $text:literal),+ $(,)?]) => {
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum $name { $($variant),+ }

        impl $name {
            /// Every value, in the order tables print them.
            pub const ALL: &'static [$name] = &[$($name::$variant),+];

            /// The canonical spelling.
            pub fn as_str(self) -> &'static str {
                match self { $($name::$variant => $text),+ }
            }

            /// Position in [`Self::ALL`].
            pub fn index(self) -> usize {
                self as usize
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.as_str())
            }
        }

        impl FromStr for $name {
            type Err = ParseIdError;
            fn from_str(s: &str) -> Result<Self, Self::Err> {
                match s {
                    $($text => Ok($name::$variant),)+
                    _ => Err(ParseIdError { kind: $kind, found: s.to_string(), expected: $expected }),
                }
            }
        }

        impl Serialize for $name {
            fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.serialize_str(self.as_str())
            }
        }

        impl<'de> Deserialize<'de> for $name {
            fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                let s = String::deserialize(d)?;
                s.parse().map_err(serde::de::Error::custom)
            }
        }
    };
}

id_enum!(Site, "site", "gitlab, magento or wordpress", [
    Gitlab => "gitlab",
    Magento => "magento",
    Wordpress => "wordpress",
]);

id_enum!(Version, "version", "v1 or v2", [
    V1 => "v1",
    V2 => "v2",
]);

id_enum!(Condition, "condition", "src, src-perc, src-exec, tgt, tgt-perc or tgt-exec", [
    Src => "src",
    SrcPerc => "src-perc",
    SrcExec => "src-exec",
    Tgt => "tgt",
    TgtPerc => "tgt-perc",
    TgtExec => "tgt-exec",
]);

/// The kind of shift a condition applies on top of its site version.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Shift {
    None,
    Perception,
    Execution,
}

impl Site {
    /// Number of task families per version (docs/formats.md#task-files).
    pub fn n_tasks(self) -> usize {
        match self {
            Site::Gitlab => 162,
            Site::Magento => 114,
            Site::Wordpress => 79,
        }
    }

    /// The base-URL placeholder used in task files, e.g. `__GITLAB__`.
    pub fn placeholder(self) -> &'static str {
        match self {
            Site::Gitlab => "__GITLAB__",
            Site::Magento => "__MAGENTO__",
            Site::Wordpress => "__WORDPRESS__",
        }
    }

    /// The image name of one version of this site, e.g. `gitlab-v2`.
    pub fn image(self, version: Version) -> String {
        format!("{self}-{version}")
    }
}

impl Condition {
    /// `src*` runs v1, `tgt*` runs v2.
    pub fn version(self) -> Version {
        match self {
            Condition::Src | Condition::SrcPerc | Condition::SrcExec => Version::V1,
            Condition::Tgt | Condition::TgtPerc | Condition::TgtExec => Version::V2,
        }
    }

    pub fn shift(self) -> Shift {
        match self {
            Condition::Src | Condition::Tgt => Shift::None,
            Condition::SrcPerc | Condition::TgtPerc => Shift::Perception,
            Condition::SrcExec | Condition::TgtExec => Shift::Execution,
        }
    }
}

/// A task uid, `skillshift.<site>.<version>.<task_id>`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Uid {
    pub site: Site,
    pub version: Version,
    pub task_id: u32,
}

impl Uid {
    pub fn new(site: Site, version: Version, task_id: u32) -> Self {
        Uid { site, version, task_id }
    }

    /// The family this uid belongs to, shared by its v1 and v2 tasks.
    pub fn family(self) -> Family {
        Family { site: self.site, task_id: self.task_id }
    }
}

impl fmt::Display for Uid {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "skillshift.{}.{}.{}", self.site, self.version, self.task_id)
    }
}

/// Why a uid did not parse.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ParseUidError {
    #[error("uid '{}' is not of the form skillshift.<site>.<version>.<task_id>", crate::text::short(.0))]
    Shape(String),
    #[error("uid '{}': {source}", crate::text::short(.uid))]
    Part { uid: String, source: ParseIdError },
    #[error("uid '{}': task id is not a non-negative integer", crate::text::short(.0))]
    TaskId(String),
}

impl FromStr for Uid {
    type Err = ParseUidError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let parts: Vec<&str> = s.split('.').collect();
        let [prefix, site, version, id] = parts.as_slice() else {
            return Err(ParseUidError::Shape(s.to_string()));
        };
        if *prefix != "skillshift" {
            return Err(ParseUidError::Shape(s.to_string()));
        }
        let part = |source| ParseUidError::Part { uid: s.to_string(), source };
        let site = site.parse().map_err(part)?;
        let version = version.parse().map_err(part)?;
        // Dense ids are plain decimals: reject "+3", "03" and the like.
        if id.is_empty() || !id.bytes().all(|b| b.is_ascii_digit()) || (id.len() > 1 && id.starts_with('0')) {
            return Err(ParseUidError::TaskId(s.to_string()));
        }
        let task_id = id.parse().map_err(|_| ParseUidError::TaskId(s.to_string()))?;
        Ok(Uid { site, version, task_id })
    }
}

impl Serialize for Uid {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for Uid {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        s.parse().map_err(serde::de::Error::custom)
    }
}

/// A task family, `<site>.<task_id>`: task `i` of both versions.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Family {
    pub site: Site,
    pub task_id: u32,
}

impl Family {
    /// The uid this family runs as under `condition`.
    pub fn uid(self, condition: Condition) -> Uid {
        Uid::new(self.site, condition.version(), self.task_id)
    }
}

impl fmt::Display for Family {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}", self.site, self.task_id)
    }
}

/// A sweep's id, as the coordinator mints it and the wire, the store and
/// records carry it: an opaque string, printed and serialized as itself.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(transparent)]
pub struct SweepId(String);

impl SweepId {
    pub fn as_str(&self) -> &str {
        &self.0
    }

    pub fn into_string(self) -> String {
        self.0
    }
}

impl fmt::Display for SweepId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl From<String> for SweepId {
    fn from(id: String) -> Self {
        SweepId(id)
    }
}

impl From<&str> for SweepId {
    fn from(id: &str) -> Self {
        SweepId(id.to_string())
    }
}

impl AsRef<str> for SweepId {
    fn as_ref(&self) -> &str {
        &self.0
    }
}

/// Lets maps keyed by sweep id be looked up with a `&str` (hashes and orders as the string does).
impl Borrow<str> for SweepId {
    fn borrow(&self) -> &str {
        &self.0
    }
}

impl PartialEq<str> for SweepId {
    fn eq(&self, other: &str) -> bool {
        self.0 == other
    }
}

impl PartialEq<&str> for SweepId {
    fn eq(&self, other: &&str) -> bool {
        self.0 == *other
    }
}

/// The (sweep, unit index, attempt) triple naming one attempt of a distributed
/// sweep; ordered by sweep, then unit, then attempt.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct AttemptKey {
    pub sweep: SweepId,
    pub unit: u32,
    pub attempt: u32,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uid_round_trips_and_rejects_bad_shapes() {
        let uid: Uid = "skillshift.gitlab.v2.9".parse().unwrap();
        assert_eq!(uid, Uid::new(Site::Gitlab, Version::V2, 9));
        assert_eq!(uid.to_string(), "skillshift.gitlab.v2.9");
        assert_eq!(uid.family().to_string(), "gitlab.9");
        for bad in [
            "skillshift.gitlab.v3.9",
            "webarena.gitlab.v1.1",
            "skillshift.gitlab.v1",
            "skillshift.shop.v1.1",
            "skillshift.gitlab.v1.-1",
            "skillshift.gitlab.v1.01",
        ] {
            assert!(bad.parse::<Uid>().is_err(), "{bad} should not parse");
        }
    }

    #[test]
    fn conditions_map_to_versions_in_table_order() {
        let names: Vec<_> = Condition::ALL.iter().map(|c| c.as_str()).collect();
        assert_eq!(names, ["src", "src-perc", "src-exec", "tgt", "tgt-perc", "tgt-exec"]);
        assert_eq!(Condition::SrcExec.version(), Version::V1);
        assert_eq!(Condition::TgtPerc.version(), Version::V2);
        assert!("target".parse::<Condition>().is_err());
    }

    #[test]
    fn a_sweep_id_prints_and_serializes_as_its_string() {
        let id = SweepId::from("sw-20261205-1");
        assert_eq!(id.to_string(), "sw-20261205-1");
        assert_eq!(serde_json::to_string(&id).unwrap(), "\"sw-20261205-1\"");
        assert_eq!(serde_json::from_str::<SweepId>("\"sw-2\"").unwrap(), "sw-2");
        let a = AttemptKey { sweep: "a".into(), unit: 9, attempt: 0 };
        let b = AttemptKey { sweep: "b".into(), unit: 0, attempt: 0 };
        assert!(a < b, "keys order by sweep first, as the outbox lists them");
    }
}
