//! The parsers under WebArena-Verified's data types, reproduced on their
//! common path: Python's `float()`, `price_parser` (currency amounts),
//! `dateutil.parser.parse` (dates and months, month-first, missing fields from
//! today), `pytimeparse2` (durations), `pint` (distances, in the units maps
//! give), `geopy.Point` (coordinates) and `word2number` (single number words).
//! What they accept beyond that is listed in `docs/webarena.md` as a departure.

use std::sync::LazyLock;

use regex::Regex;

/// Python's `float(s)`: surrounding whitespace, `_` between digits, `inf`/`nan`.
pub fn py_float(s: &str) -> Option<f64> {
    let t = s.trim();
    if t.is_empty() {
        return None;
    }
    let lower = t.to_ascii_lowercase();
    let body = lower.trim_start_matches(['+', '-']);
    if matches!(body, "inf" | "infinity" | "nan") {
        return lower.parse::<f64>().ok().or(Some(if lower.starts_with('-') {
            f64::NEG_INFINITY
        } else {
            f64::INFINITY
        }));
    }
    if t.contains("__") || t.starts_with('_') || t.ends_with('_') {
        return None;
    }
    let cleaned = t.replace('_', "");
    let ok = cleaned.chars().all(|c| c.is_ascii_digit() || matches!(c, '.' | 'e' | 'E' | '+' | '-'));
    if !ok || !cleaned.chars().any(|c| c.is_ascii_digit()) {
        return None;
    }
    cleaned.parse::<f64>().ok()
}

const SMALL: [(&str, i64); 28] = [
    ("zero", 0),
    ("one", 1),
    ("two", 2),
    ("three", 3),
    ("four", 4),
    ("five", 5),
    ("six", 6),
    ("seven", 7),
    ("eight", 8),
    ("nine", 9),
    ("ten", 10),
    ("eleven", 11),
    ("twelve", 12),
    ("thirteen", 13),
    ("fourteen", 14),
    ("fifteen", 15),
    ("sixteen", 16),
    ("seventeen", 17),
    ("eighteen", 18),
    ("nineteen", 19),
    ("twenty", 20),
    ("thirty", 30),
    ("forty", 40),
    ("fifty", 50),
    ("sixty", 60),
    ("seventy", 70),
    ("eighty", 80),
    ("ninety", 90),
];

/// `word2number.w2n.word_to_num` for numbers below a hundred written in words ("twenty three").
pub fn words_to_num(s: &str) -> Option<f64> {
    let t = s.replace('-', " ").to_lowercase();
    let words: Vec<&str> = t.split_whitespace().collect();
    if words.is_empty() || words.len() > 2 {
        return None;
    }
    let vals: Option<Vec<i64>> =
        words.iter().map(|w| SMALL.iter().find(|(name, _)| name == w).map(|(_, v)| *v)).collect();
    let vals = vals?;
    match vals.as_slice() {
        [a] => Some(*a as f64),
        [a, b] if *a >= 20 && *a % 10 == 0 && *b < 10 => Some((*a + *b) as f64),
        _ => None,
    }
}

static PRICE_TEXT: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"([.]?\d[\d\s.,']*)\s*?(?:[^%\d]|$)").expect("a valid pattern"));

/// `price_parser.Price.fromstring(text, decimal_separator).amount_float`.
pub fn price_amount(text: &str, decimal_separator: char) -> Option<f64> {
    let price = super::pytext::collapse_ws(text);
    let amount_text = match PRICE_TEXT.captures(&price) {
        Some(c) => {
            let g = c.get(1).map_or("", |m| m.as_str()).trim_end_matches([',', '.']);
            let g = g.replace('\'', "");
            if g.matches('.').count() == 1 {
                g.trim().to_string()
            } else {
                g.trim_start_matches([',', '.']).trim().to_string()
            }
        }
        None if price.to_lowercase().contains("free") => "0".to_string(),
        None => return None,
    };
    if amount_text.is_empty() {
        return None;
    }
    let num = amount_text.trim().replace(' ', "");
    let num = if decimal_separator == '.' { num.replace(',', "") } else { num.replace('.', "").replace(',', ".") };
    decimal(&num)
}

/// Python's `float(Decimal(s))`: digits with at most one point, an optional sign and exponent.
fn decimal(s: &str) -> Option<f64> {
    let body = s.strip_prefix(['+', '-']).unwrap_or(s);
    let (mantissa, exp) = match body.find(['e', 'E']) {
        Some(i) => (&body[..i], Some(&body[i + 1..])),
        None => (body, None),
    };
    let digits_ok = mantissa.matches('.').count() <= 1
        && mantissa.chars().all(|c| c.is_ascii_digit() || c == '.')
        && mantissa.chars().any(|c| c.is_ascii_digit());
    let exp_ok = exp.is_none_or(|e| {
        let e = e.strip_prefix(['+', '-']).unwrap_or(e);
        !e.is_empty() && e.chars().all(|c| c.is_ascii_digit())
    });
    if !digits_ok || !exp_ok {
        return None;
    }
    s.parse::<f64>().ok()
}

/// A value in units of 10^-9, from the shortest decimal form of `f` (Python's `Decimal(str(f))`).
pub fn scaled(f: f64) -> Option<i128> {
    if !f.is_finite() {
        return None;
    }
    let text = format!("{f}");
    let negative = text.starts_with('-');
    let body = text.trim_start_matches('-');
    let (int, frac) = body.split_once('.').unwrap_or((body, ""));
    let mut frac = frac.to_string();
    frac.truncate(9);
    while frac.len() < 9 {
        frac.push('0');
    }
    let v: i128 = format!("{int}{frac}").parse().ok()?;
    Some(if negative { -v } else { v })
}

const MONTHS: [&str; 12] = [
    "january",
    "february",
    "march",
    "april",
    "may",
    "june",
    "july",
    "august",
    "september",
    "october",
    "november",
    "december",
];

/// The full English name of month `m` (1-12), as `calendar.month_name` gives it.
pub fn month_name(m: u32) -> Option<&'static str> {
    const NAMES: [&str; 12] = [
        "January",
        "February",
        "March",
        "April",
        "May",
        "June",
        "July",
        "August",
        "September",
        "October",
        "November",
        "December",
    ];
    NAMES.get(m.checked_sub(1)? as usize).copied()
}

fn month_of_word(w: &str) -> Option<u32> {
    let w = w.trim_end_matches('.');
    if w.len() < 3 {
        return None;
    }
    MONTHS
        .iter()
        .position(|m| *m == w || (w.len() == 3 && m.starts_with(w)) || (w == "sept" && *m == "september"))
        .map(|i| i as u32 + 1)
}

const WEEKDAYS: [&str; 7] = ["monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"];

/// Today, as (year, month, day), in UTC.
pub fn today() -> (i64, u32, u32) {
    let secs = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs());
    civil(secs as i64 / 86_400)
}

/// The civil date of a day count since 1970-01-01.
fn civil(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let y = yoe + era * 400 + i64::from(m <= 2);
    (y, m, d)
}

fn days_in(y: i64, m: u32) -> u32 {
    match m {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        _ if (y % 4 == 0 && y % 100 != 0) || y % 400 == 0 => 29,
        _ => 28,
    }
}

/// `dateutil.parser.parse(text, default=default)` for dates written with numbers and
/// English month names; times, weekdays and `at`/`of`/`on` are skipped. `None` where it raises.
pub fn parse_date(text: &str, default: (i64, u32, u32)) -> Option<(i64, u32, u32)> {
    // Tokens: runs of digits, runs of letters; everything else separates.
    let lower = text.to_lowercase();
    let mut tokens: Vec<(String, char)> = Vec::new(); // (token, the separator that followed)
    let chars: Vec<char> = lower.chars().collect();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if c.is_ascii_digit() {
            let start = i;
            while i < chars.len() && chars[i].is_ascii_digit() {
                i += 1;
            }
            // A time (hh:mm[:ss]) is skipped whole.
            if i < chars.len() && chars[i] == ':' {
                while i < chars.len() && (chars[i].is_ascii_digit() || chars[i] == ':' || chars[i] == '.') {
                    i += 1;
                }
                continue;
            }
            let tok: String = chars[start..i].iter().collect();
            let sep = chars.get(i).copied().unwrap_or(' ');
            tokens.push((tok, sep));
        } else if c.is_alphabetic() {
            let start = i;
            while i < chars.len() && chars[i].is_alphabetic() {
                i += 1;
            }
            let word: String = chars[start..i].iter().collect();
            let sep = chars.get(i).copied().unwrap_or(' ');
            tokens.push((word, sep));
        } else {
            i += 1;
        }
    }
    let mut numbers: Vec<(String, char)> = Vec::new();
    let mut month_word: Option<u32> = None;
    for (t, sep) in tokens {
        if t.chars().all(|c| c.is_ascii_digit()) {
            numbers.push((t, sep));
        } else if let Some(m) = month_of_word(&t) {
            if month_word.is_some() {
                return None;
            }
            month_word = Some(m);
        } else if matches!(t.as_str(), "st" | "nd" | "rd" | "th" | "am" | "pm" | "at" | "of" | "on" | "the" | "and")
            || WEEKDAYS.iter().any(|w| *w == t || (t.len() >= 3 && w.starts_with(t.as_str())))
            || t == "t"
            || t == "z"
            || t == "utc"
        {
            continue;
        } else {
            return None;
        }
    }
    let (mut year, mut month, mut day): (Option<i64>, Option<u32>, Option<u32>) = (None, month_word, None);
    let mut rest: Vec<i64> = Vec::new();
    for (t, _) in &numbers {
        let v: i64 = t.parse().ok()?;
        if t.len() >= 3 {
            // A long number is a year (or, for 6 or 8 digits with nothing else, YYYYMMDD).
            if t.len() == 8 && numbers.len() == 1 && month.is_none() {
                year = Some(v / 10_000);
                month = Some(((v / 100) % 100) as u32);
                day = Some((v % 100) as u32);
                continue;
            }
            if year.is_some() {
                return None;
            }
            year = Some(v);
        } else {
            rest.push(v);
        }
    }
    // Month-first for the short numbers, as dateutil with dayfirst=False resolves them.
    let year_first = numbers.first().is_some_and(|(t, _)| t.len() >= 3);
    match (month.is_some(), rest.as_slice()) {
        (_, []) => {}
        (true, [d]) => day = Some(*d as u32),
        (true, [d, y]) if year.is_none() => {
            day = Some(*d as u32);
            year = Some(*y);
        }
        (false, [m]) if year.is_some() => {
            month = Some(*m as u32);
        }
        (false, [a]) => {
            if (1..=12).contains(a) {
                month = Some(*a as u32);
            } else {
                day = Some(*a as u32);
            }
        }
        (false, [a, b]) if year.is_some() => {
            if year_first || *a <= 12 {
                month = Some(*a as u32);
                day = Some(*b as u32);
            } else {
                day = Some(*a as u32);
                month = Some(*b as u32);
            }
        }
        (false, [a, b]) => {
            if *a > 12 && *b <= 12 {
                day = Some(*a as u32);
                month = Some(*b as u32);
            } else if *b > 31 {
                month = Some(*a as u32);
                year = Some(*b);
            } else {
                month = Some(*a as u32);
                day = Some(*b as u32);
            }
        }
        (false, [a, b, c]) if year.is_none() => {
            if *a > 31 {
                year = Some(*a);
                month = Some(*b as u32);
                day = Some(*c as u32);
            } else if *a > 12 {
                day = Some(*a as u32);
                month = Some(*b as u32);
                year = Some(*c);
            } else {
                month = Some(*a as u32);
                day = Some(*b as u32);
                year = Some(*c);
            }
        }
        _ => return None,
    }
    if month.is_none() && day.is_none() && year.is_none() {
        return None;
    }
    let mut y = year.unwrap_or(default.0);
    if let Some(yv) = year {
        if yv < 100 && numbers.iter().any(|(t, _)| t.len() <= 2 && t.parse::<i64>().ok() == Some(yv)) {
            // dateutil: a two-digit year is taken within 50 years of this one.
            let now = today().0;
            let century = now / 100 * 100;
            y = yv + century;
            if y >= now + 50 {
                y -= 100;
            } else if y < now - 50 {
                y += 100;
            }
        }
    }
    let m = month.unwrap_or(default.1);
    if !(1..=12).contains(&m) {
        return None;
    }
    let d = match day {
        Some(d) => d,
        None => default.2.min(days_in(y, m)),
    };
    if d < 1 || d > days_in(y, m) {
        return None;
    }
    Some((y, m, d))
}

static DURATION_FORMATS: LazyLock<Vec<Regex>> = LazyLock::new(|| {
    let years = r"(?P<years>[\d.]+)\s*(?:ys?|yrs?.?|years?)";
    let months = r"(?P<months>[\d.]+)\s*(?:mos?.?|mths?.?|months?)";
    let weeks = r"(?P<weeks>[\d.]+)\s*(?:w|wks?|weeks?)";
    let days = r"(?P<days>[\d.]+)\s*(?:d|dys?|days?)";
    let hours = r"(?P<hours>[\d.]+)\s*(?:h|hrs?|hours?)";
    let mins = r"(?P<minutes>[\d.]+)\s*(?:m|(mins?)|(minutes?))";
    let secs = r"(?P<seconds>[\d.]+)\s*(?:s|secs?|seconds?)";
    let millis = r"(?P<milliseconds>[\d.]+)\s*(?:ms|msecs?|millis|milliseconds?)";
    let opt = |x: &str| format!("(?:{x})?");
    let optsep = |x: &str| format!(r"(?:{x}\s*(?:[,/]\s*)?)?");
    let secclock = r":(?P<seconds>\d{2}(?:\.\d+)?)";
    let minclock = r"(?P<minutes>\d{1,2}):(?P<seconds>\d{2}(?:\.\d+)?)";
    let hourclock = r"(?P<hours>\d+):(?P<minutes>\d{2}):(?P<seconds>\d{2}(?:\.\d+)?)";
    let dayclock = r"(?P<days>\d+):(?P<hours>\d{2}):(?P<minutes>\d{2}):(?P<seconds>\d{2}(?:\.\d+)?)";
    let formats = [
        format!(
            r"{}\s*{}\s*{}\s*{}\s*{}\s*{}\s*{}\s*{}",
            optsep(years),
            optsep(months),
            optsep(weeks),
            optsep(days),
            optsep(hours),
            optsep(mins),
            opt(secs),
            opt(millis)
        ),
        format!(
            r"{}\s*{}\s*{}\s*{}\s*{}\s*{}",
            optsep(weeks),
            optsep(days),
            optsep(hours),
            optsep(mins),
            opt(secs),
            opt(millis)
        ),
        minclock.to_string(),
        format!(r"{}\s*{}\s*{hourclock}", optsep(weeks), optsep(days)),
        dayclock.to_string(),
        secclock.to_string(),
        years.to_string(),
        months.to_string(),
    ];
    formats.iter().filter_map(|f| Regex::new(&format!(r"(?i)^\s*(?:{f})\s*$")).ok()).collect()
});

/// `pytimeparse2.parse(text)` in seconds; `None` where it gives `None`.
pub fn parse_duration(text: &str) -> Option<f64> {
    let stripped = text.replacen('.', "", 1).replacen('-', "", 1).replacen('+', "", 1);
    if !stripped.is_empty() && stripped.chars().all(|c| c.is_ascii_digit()) {
        return py_float(text);
    }
    let t = text.trim_start();
    let (sign, unsigned) = match t.chars().next() {
        Some(c @ ('+' | '-' | '|')) => (if c == '-' { -1.0 } else { 1.0 }, t[1..].trim_start()),
        _ => (1.0, t),
    };
    for re in DURATION_FORMATS.iter() {
        let Some(c) = re.captures(unsigned) else { continue };
        if c.get(0).is_none_or(|m| m.as_str().trim().is_empty()) {
            continue;
        }
        let mut total = 0.0;
        for (name, mult) in [
            ("years", 31_536_000.0),
            ("months", 2_592_000.0),
            ("weeks", 604_800.0),
            ("days", 86_400.0),
            ("hours", 3600.0),
            ("minutes", 60.0),
            ("seconds", 1.0),
            ("milliseconds", 1e-3),
        ] {
            if let Some(m) = c.name(name) {
                let v = m.as_str();
                if v.is_empty() {
                    continue;
                }
                let direct = matches!(name, "hours" | "minutes" | "days" | "milliseconds");
                // Hours, minutes, days and milliseconds go through float() (which may raise);
                // the other units count only when they are digits with at most one point.
                let numeric = v.replacen('.', "", 1).chars().all(|ch| ch.is_ascii_digit());
                if !direct && !numeric {
                    continue;
                }
                total += py_float(v)? * mult;
            }
        }
        return Some(sign * total);
    }
    py_float(unsigned).map(|f| f * sign)
}

/// Metres per unit, for the units pint knows by these names.
fn unit_metres(unit: &str) -> Option<f64> {
    Some(match unit {
        "m" | "meter" | "meters" | "metre" | "metres" => 1.0,
        "km" | "kilometer" | "kilometers" | "kilometre" | "kilometres" => 1000.0,
        "mi" | "mile" | "miles" => 1609.344,
        "ft" | "foot" | "feet" => 0.3048,
        "yd" | "yard" | "yards" => 0.9144,
        "cm" | "centimeter" | "centimeters" | "centimetre" | "centimetres" => 0.01,
        "mm" | "millimeter" | "millimeters" | "millimetre" | "millimetres" => 0.001,
        "in" | "inch" | "inches" => 0.0254,
        "nmi" => 1852.0,
        _ => return None,
    })
}

static DISTANCE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"^\s*([+-]?(?:\d+\.?\d*|\.\d+)(?:e[+-]?\d+)?)\s*([a-z]+)\s*$").expect("a valid pattern")
});

/// Why a distance does not parse (pint's complaint), with the text as given.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DistanceError {
    /// Not `<number> <unit>`.
    #[error("cannot parse distance {0:?}")]
    Shape(String),
    #[error("bad number in {0:?}")]
    Number(String),
    #[error("invalid or unsupported unit in distance: {0}")]
    Unit(String),
}

/// `pint`'s `parse_expression(text).to(meter).magnitude` for `<number> <unit>`; `Err` with pint's complaint.
pub fn parse_distance(text: &str) -> Result<f64, DistanceError> {
    let lower = text.to_lowercase();
    let c = DISTANCE.captures(&lower).ok_or_else(|| DistanceError::Shape(text.to_string()))?;
    let n: f64 = c[1].parse().map_err(|_| DistanceError::Number(text.to_string()))?;
    let unit = unit_metres(&c[2]).ok_or_else(|| DistanceError::Unit(text.to_string()))?;
    Ok(n * unit)
}

static COORDS: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)^\s*([+-]?\d+(?:\.\d+)?)\s*°?\s*([nsew])?\s*[,;\s]\s*([+-]?\d+(?:\.\d+)?)\s*°?\s*([nsew])?\s*$")
        .expect("a valid pattern")
});

/// `geopy.Point(text)` for two decimal degrees, each with an optional hemisphere letter.
pub fn parse_coordinates(text: &str) -> Option<(f64, f64)> {
    let c = COORDS.captures(text)?;
    let mut lat: f64 = c[1].parse().ok()?;
    let mut lon: f64 = c[3].parse().ok()?;
    if let Some(h) = c.get(2) {
        if h.as_str().eq_ignore_ascii_case("s") {
            lat = -lat;
        }
    }
    if let Some(h) = c.get(4) {
        if h.as_str().eq_ignore_ascii_case("w") {
            lon = -lon;
        }
    }
    Some((lat, lon))
}

/// geopy's longitude normalization into [-180, 180].
pub fn normalize_longitude(lon: f64) -> f64 {
    if (-180.0..=180.0).contains(&lon) {
        return lon;
    }
    let m = (lon + 180.0).rem_euclid(360.0) - 180.0;
    if m == -180.0 && lon > 0.0 {
        180.0
    } else {
        m
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn prices_durations_distances_and_dates_parse_like_their_libraries() {
        assert_eq!(price_amount("$1,234.56", '.'), Some(1234.56));
        assert_eq!(price_amount("free", ','), Some(0.0));
        assert_eq!(price_amount("none", ','), None);
        assert_eq!(parse_duration("2h32m"), Some(9120.0));
        assert_eq!(parse_duration("4:13"), Some(253.0));
        assert_eq!(parse_duration("5 hours, 34 minutes"), Some(20040.0));
        assert_eq!(parse_duration("soon"), None);
        assert_eq!(parse_distance("3.5 km").unwrap(), 3500.0);
        assert!(parse_distance("12").is_err());
        let d = (2026, 12, 3);
        assert_eq!(parse_date("2023-02-01", d), Some((2023, 2, 1)));
        assert_eq!(parse_date("02/1/2023", d), Some((2023, 2, 1)));
        assert_eq!(parse_date("Jan 15th, 2024", d), Some((2024, 1, 15)));
        assert_eq!(parse_date("15 January 2024", d), Some((2024, 1, 15)));
        assert_eq!(parse_date("March", (2000, 1, 1)), Some((2000, 3, 1)));
        assert_eq!(parse_date("banana", d), None);
        assert_eq!(scaled(10.1), Some(10_100_000_000));
    }
}
