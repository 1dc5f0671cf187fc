//! Text helpers for pages and seeded data: the HTML escaper, slugs,
//! case-insensitive keyword matching and calendar dates.

/// Escapes text for HTML content and attribute values (the workspace's one escaper).
pub use skillshift_common::html::escape as esc;

/// A lowercase, dash-separated slug of `s` (WordPress slugs, Magento URL keys).
pub fn slug(s: &str) -> String {
    let mut out = String::new();
    for c in s.chars() {
        if c.is_ascii_alphanumeric() {
            out.push(c.to_ascii_lowercase());
        } else if !out.ends_with('-') && !out.is_empty() {
            out.push('-');
        }
    }
    out.trim_end_matches('-').to_string()
}

/// Whether `hay` contains `needle`, ignoring case and the needle's surrounding
/// white space (a grid's or list's keyword search).
pub fn contains_ci(hay: &str, needle: &str) -> bool {
    hay.to_lowercase().contains(&needle.trim().to_lowercase())
}

/// `YYYY-MM-DD` of a day count since 1970-01-01 (civil calendar).
pub fn date_of(days: i64) -> String {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!("{y:04}-{m:02}-{d:02}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slugs_matching_and_dates() {
        assert_eq!(slug("Hello, World!  Again"), "hello-world-again");
        assert!(contains_ci("Joust Duffle Bag", " duffle "));
        assert!(!contains_ci("Joust Duffle Bag", "tote"));
        assert_eq!(date_of(0), "1970-01-01");
        assert_eq!(date_of(19_358), "2023-01-01");
    }
}
