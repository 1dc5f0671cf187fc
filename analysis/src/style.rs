//! The look the report and the leaderboard share: the inline stylesheet of
//! every HTML page and the flag on an SFR value that rests on few skill
//! invocations. A leaf, so the two renderers depend on it and not on each
//! other.

/// SFR values resting on fewer invocations than this are flagged `⚠︎`.
pub const LOW_INVOCATIONS: u64 = 30;
pub const FLAG: &str = "⚠︎";

/// The inline stylesheet of every HTML page.
pub const STYLE: &str = "body{font-family:system-ui,sans-serif;margin:2rem;color:#222}\
table{border-collapse:collapse;margin:.5rem 0 1rem}\
th,td{padding:.25rem .6rem;border-bottom:1px solid #ddd;text-align:right;white-space:nowrap}\
th:first-child,td:first-child{text-align:left}th{background:#f4f4f4}\
td[title]{cursor:help}p{max-width:60rem}";
