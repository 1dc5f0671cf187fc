//! WebArena-Verified's data types (`core/evaluation/data_types/`): a raw
//! value, or a list of two or more alternatives, normalized by its type, and
//! equality between two values of one type (any alternative of one side
//! matching any of the other, with each type's tolerance).
//!
//! | type (`format` or `type` in a schema) | normalized to | equal when |
//! | --- | --- | --- |
//! | `string` | the string pipeline, lower case | equal, a `^...$` side fully matches the other (case ignored), or equal once quotes and `.,;:!?` are stripped from both ends |
//! | `number`, `integer` | a float (`,` and spaces dropped; a number word) | equal |
//! | `boolean` | `true/yes/y/1/t/on`, `false/no/n/0/f/off` | equal |
//! | `null` | `None` for `""`, `n/a`, `na`, `nan`, `null`, `none` | always |
//! | `currency` | the amount (`price_parser`) | within 0.1 (first alternatives only) |
//! | `date` | ISO `YYYY-MM-DD` (`dateutil`, month first) | equal |
//! | `month` | the month's English name | equal |
//! | `duration` | seconds (`pytimeparse2`; a bare number refused) | within max(180 s, 10%) |
//! | `distance` | metres (`pint`; a bare number refused; `110k` is km) | within max(10 m, 2%) |
//! | `coordinates` | latitude, longitude | within 1e-5 degrees each (first alternatives only) |
//! | `location-name` | lower case | `token_sort_ratio` ≥ 80 |
//! | `json` | compact JSON, keys sorted | equal |
//! | `markdown` | line endings, list markers, headers, links tidied | equal |
//! | `string_list` | the comma-separated items, sorted | equal |
//! | `url` | [`super::urlnorm`] | base URL and query equal |

use serde_json::Value;

use super::error::VerifiedError;
use super::parse;
use super::pytext::{self, is_regexp, py_str, truthy};
use super::urlnorm::{self, Sites, UrlOpts, UrlValue};

/// A data type of the registry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Str,
    Num,
    Bool,
    Empty,
    Currency,
    Date,
    Month,
    Duration,
    Distance,
    Coords,
    Location,
    Json,
    Markdown,
    StrList,
    Url,
}

impl Kind {
    /// `TYPE_REGISTRY[name]`; `Err` for a name it lacks, and for the two types not reproduced here.
    pub fn of(name: &str) -> Result<Kind, VerifiedError> {
        Ok(match name {
            "string" => Kind::Str,
            "number" | "integer" => Kind::Num,
            "boolean" => Kind::Bool,
            "null" => Kind::Empty,
            "currency" => Kind::Currency,
            "date" => Kind::Date,
            "month" => Kind::Month,
            "duration" => Kind::Duration,
            "distance" => Kind::Distance,
            "coordinates" => Kind::Coords,
            "location-name" => Kind::Location,
            "json" => Kind::Json,
            "markdown" => Kind::Markdown,
            "string_list" => Kind::StrList,
            "url" => Kind::Url,
            "full_address" | "base64" => return Err(VerifiedError::TypeNotReproduced(name.to_string())),
            other => return Err(VerifiedError::UnknownType(other.to_string())),
        })
    }

    pub fn name(self) -> &'static str {
        match self {
            Kind::Str => "string",
            Kind::Num => "number",
            Kind::Bool => "boolean",
            Kind::Empty => "null",
            Kind::Currency => "currency",
            Kind::Date => "date",
            Kind::Month => "month",
            Kind::Duration => "duration",
            Kind::Distance => "distance",
            Kind::Coords => "coordinates",
            Kind::Location => "location-name",
            Kind::Json => "json",
            Kind::Markdown => "markdown",
            Kind::StrList => "string_list",
            Kind::Url => "url",
        }
    }
}

/// One normalized alternative.
#[derive(Debug, Clone, PartialEq)]
pub enum Atom {
    Text(String),
    Float(f64),
    Bool(bool),
    None,
    /// Units of 10^-9.
    Amount(i128),
    Coords(f64, f64),
    List(Vec<String>),
    Url(UrlValue),
}

impl Atom {
    /// What the package reports as the normalized value.
    pub fn to_json(&self) -> Value {
        match self {
            Atom::Text(s) => Value::String(s.clone()),
            Atom::Float(f) => serde_json::Number::from_f64(*f).map_or(Value::Null, Value::Number),
            Atom::Bool(b) => Value::Bool(*b),
            Atom::None => Value::Null,
            Atom::Amount(a) => Value::String(format!("{}", *a as f64 / 1e9)),
            Atom::Coords(lat, lon) => serde_json::json!({"latitude": lat, "longitude": lon}),
            Atom::List(l) => Value::from(l.clone()),
            Atom::Url(u) => Value::String(u.to_string()),
        }
    }

    fn text(&self) -> &str {
        match self {
            Atom::Text(s) => s,
            _ => "",
        }
    }
}

/// What a value is normalized with besides its type: the task's sites, and a URL's settings.
#[derive(Clone, Copy)]
pub struct Ctx<'a> {
    pub sites: &'a Sites,
    /// A `derender_url_fct` was given: strings holding `http` are derendered first.
    pub derender: bool,
    /// The URL settings (`strict` is the derendering's, and so the side's).
    pub url: &'a UrlOpts,
}

/// A normalized value of one type.
#[derive(Debug, Clone, PartialEq)]
pub struct Typed {
    pub kind: Kind,
    pub alts: Vec<Atom>,
    /// For a URL: render templates in regex patterns when comparing (the network evaluator's URLs).
    pub render: bool,
}

impl Typed {
    /// `TypeClass(raw, **kwargs)`; `Err` where the constructor raises.
    pub fn new(kind: Kind, raw: &Value, cx: &Ctx) -> Result<Typed, VerifiedError> {
        let render = kind == Kind::Url && cx.url.render;
        if kind == Kind::Coords {
            if let Value::Array(items) = raw {
                if items.len() == 2
                    && items.iter().all(|v| matches!(v, Value::Number(_) | Value::String(_) | Value::Bool(_)))
                {
                    return Ok(Typed { kind, alts: vec![pipeline(kind, raw, cx)?], render });
                }
            }
        }
        let alts = match raw {
            Value::Array(items) if items.len() < 2 => {
                return Err(VerifiedError::TooFewAlternatives { raw: raw.clone(), count: items.len() })
            }
            Value::Array(items) => items.iter().map(|v| pipeline(kind, v, cx)).collect::<Result<Vec<_>, _>>()?,
            single => vec![pipeline(kind, single, cx)?],
        };
        Ok(Typed { kind, alts, render })
    }

    /// `.normalized` (the first alternative), for reports.
    pub fn to_json(&self) -> Value {
        self.alts.first().map_or(Value::Null, Atom::to_json)
    }

    /// `is_regexp` of any alternative's text.
    pub fn is_regexp(&self) -> bool {
        self.alts.iter().any(|a| match a {
            Atom::Text(s) => is_regexp(s),
            Atom::Url(u) => is_regexp(&u.to_string()),
            _ => false,
        })
    }

    /// `str(self)`: the first alternative as text.
    pub fn str(&self) -> String {
        match self.alts.first() {
            Some(Atom::Text(s)) => s.clone(),
            Some(Atom::Url(u)) => u.to_string(),
            Some(Atom::Float(f)) => crate::evaluate::python::float_repr(*f),
            Some(Atom::Bool(b)) => if *b { "True" } else { "False" }.to_string(),
            Some(Atom::None) | None => "None".to_string(),
            Some(other) => other.to_json().to_string(),
        }
    }

    /// `self == other` for two normalized values.
    pub fn eq(&self, other: &Typed, sites: &Sites) -> bool {
        if self.kind != other.kind {
            return false;
        }
        let pairs = || self.alts.iter().flat_map(|a| other.alts.iter().map(move |b| (a, b)));
        match self.kind {
            Kind::Str => str_eq(&self.alts, &other.alts),
            Kind::Currency => match (self.alts.first(), other.alts.first()) {
                (Some(Atom::Amount(a)), Some(Atom::Amount(b))) => (a - b).abs() <= 100_000_000,
                _ => false,
            },
            Kind::Duration => pairs().any(|p| match p {
                (Atom::Float(a), Atom::Float(b)) => (a - b).abs() <= f64::max(180.0, a.max(*b) * 0.10),
                _ => false,
            }),
            Kind::Distance => pairs().any(|p| match p {
                (Atom::Float(a), Atom::Float(b)) => (a - b).abs() <= f64::max(10.0, a.max(*b) * 0.02),
                _ => false,
            }),
            Kind::Coords => match (self.alts.first(), other.alts.first()) {
                (Some(Atom::Coords(a, b)), Some(Atom::Coords(c, d))) => (a - c).abs() <= 1e-5 && (b - d).abs() <= 1e-5,
                _ => false,
            },
            Kind::Location => pairs().any(|(a, b)| {
                let (a, b) = (a.text(), b.text());
                if a.is_empty() || b.is_empty() {
                    return a == b;
                }
                token_sort_ratio(a, b) >= 80
            }),
            Kind::Url => pairs().any(|p| match p {
                (Atom::Url(a), Atom::Url(b)) => {
                    a.matches_base_path(b, self.render.then_some(sites)) && a.query_params_equal(b)
                }
                _ => false,
            }),
            _ => pairs().any(|(a, b)| a == b),
        }
    }
}

/// `NormalizedString.__eq__` over two sets of alternatives.
fn str_eq(mine: &[Atom], theirs: &[Atom]) -> bool {
    for (pats, texts) in [(mine, theirs), (theirs, mine)] {
        for p in pats.iter().map(Atom::text).filter(|p| is_regexp(p)) {
            if let Some(re) = pytext::py_regex(p, true) {
                if texts.iter().any(|t| pytext::re_fullmatch(&re, t.text())) {
                    return true;
                }
            }
        }
    }
    if mine.iter().any(|a| theirs.iter().any(|b| a.text() == b.text())) {
        return true;
    }
    let strip =
        |s: &str| s.trim_matches(|c| matches!(c, '\'' | '"' | '`' | '.' | ',' | ';' | ':' | '!' | '?')).to_string();
    mine.iter().any(|a| theirs.iter().any(|b| strip(a.text()) == strip(b.text())))
}

/// A normalized string against a raw string (`NormalizedString.__eq__(str)` normalizes it first).
pub fn str_eq_raw(t: &Typed, raw: &str, cx: &Ctx) -> bool {
    match Typed::new(Kind::Str, &Value::String(raw.to_string()), cx) {
        Ok(other) => str_eq(&t.alts, &other.alts),
        Err(_) => false,
    }
}

/// `thefuzz.fuzz.token_sort_ratio(a, b)`: ASCII only, non-alphanumerics to spaces, lower case,
/// tokens sorted, then the Indel similarity (2·LCS / total length), rounded half to even.
pub fn token_sort_ratio(a: &str, b: &str) -> u32 {
    let process = |s: &str| -> String {
        let cleaned: String = s
            .chars()
            .filter(char::is_ascii)
            .map(|c| if c.is_ascii_alphanumeric() { c.to_ascii_lowercase() } else { ' ' })
            .collect();
        let mut toks: Vec<&str> = cleaned.split_whitespace().collect();
        toks.sort_unstable();
        toks.join(" ")
    };
    let (x, y) = (process(a), process(b));
    let (x, y): (Vec<char>, Vec<char>) = (x.chars().collect(), y.chars().collect());
    let total = x.len() + y.len();
    if total == 0 {
        return 100;
    }
    let mut prev = vec![0usize; y.len() + 1];
    for cx in &x {
        let mut cur = vec![0usize; y.len() + 1];
        for (j, cy) in y.iter().enumerate() {
            cur[j + 1] = if cx == cy { prev[j] + 1 } else { prev[j + 1].max(cur[j]) };
        }
        prev = cur;
    }
    let lcs = prev[y.len()];
    let score = 200.0 * lcs as f64 / total as f64;
    let floor = score.floor();
    let rounded = if (score - floor - 0.5).abs() < 1e-12 {
        if floor as u64 % 2 == 0 {
            floor
        } else {
            floor + 1.0
        }
    } else {
        score.round()
    };
    rounded as u32
}

/// `_normalize_pipeline`: a string is first normalized (each type its own way), then the type's own step.
fn pipeline(kind: Kind, raw: &Value, cx: &Ctx) -> Result<Atom, VerifiedError> {
    let v = match raw {
        Value::String(s) => Value::String(normalize_text(kind, s, cx)),
        other => other.clone(),
    };
    type_normalize(kind, &v, cx)
}

/// The `_normalize_string` of each type.
fn normalize_text(kind: Kind, s: &str, cx: &Ctx) -> String {
    match kind {
        Kind::Url | Kind::Markdown => pytext::strip(s).to_string(),
        Kind::Empty => {
            static SLASH: std::sync::LazyLock<regex::Regex> =
                std::sync::LazyLock::new(|| regex::Regex::new(r"\s*/\s*").expect("a valid pattern"));
            let t = pytext::collapse_ws(&pytext::strip(s).to_lowercase());
            SLASH.replace_all(&t, "/").into_owned()
        }
        _ => {
            let mut s = s.to_string();
            if cx.derender && !s.is_empty() && !is_regexp(&s) && s.contains("http") {
                s = cx.sites.derender(&s, false).unwrap_or(s);
            }
            let base = pytext::normalize_string(&s);
            if kind == Kind::Duration {
                hours_clock(&base)
            } else {
                base
            }
        }
    }
}

/// `re.sub(r"(\d+):(\d+)\s*hours?", r"\1h\2m", s)`.
fn hours_clock(s: &str) -> String {
    static RE: std::sync::LazyLock<regex::Regex> =
        std::sync::LazyLock::new(|| regex::Regex::new(r"(\d+):(\d+)\s*hours?").expect("a valid pattern"));
    RE.replace_all(s, "${1}h${2}m").into_owned()
}

fn is_number(v: &Value) -> bool {
    matches!(v, Value::Number(_) | Value::Bool(_))
}

fn number(v: &Value) -> Option<f64> {
    match v {
        Value::Number(n) => n.as_f64(),
        Value::Bool(b) => Some(f64::from(u8::from(*b))),
        _ => None,
    }
}

fn type_normalize(kind: Kind, v: &Value, cx: &Ctx) -> Result<Atom, VerifiedError> {
    let bad = |why: &'static str| Err(VerifiedError::Refused { why, value: v.clone() });
    match kind {
        Kind::Str => {
            if !truthy(v) {
                return Ok(Atom::Text(String::new()));
            }
            if let Value::String(s) = v {
                if is_regexp(s) {
                    return Ok(Atom::Text(pytext::strip(s).to_string()));
                }
            }
            Ok(Atom::Text(pytext::strip(&py_str(v).to_lowercase()).to_string()))
        }
        Kind::Location => {
            if v.is_null() {
                return bad("value cannot be None");
            }
            if !truthy(v) {
                return Ok(Atom::Text(String::new()));
            }
            Ok(Atom::Text(pytext::strip(&py_str(v).to_lowercase()).to_string()))
        }
        Kind::Num => {
            if let Some(f) = number(v) {
                return Ok(Atom::Float(f));
            }
            if !truthy(v) {
                return bad("number value is empty or none");
            }
            let text = py_str(v);
            let compact = text.replace([',', ' '], "");
            match parse::py_float(&compact).or_else(|| parse::words_to_num(&text)) {
                Some(f) => Ok(Atom::Float(f)),
                None => bad("unable to parse number"),
            }
        }
        Kind::Bool => match v {
            Value::Bool(b) => Ok(Atom::Bool(*b)),
            Value::Number(n) => Ok(Atom::Bool(n.as_f64().is_some_and(|f| f != 0.0))),
            Value::String(s) if !s.is_empty() => match pytext::strip(s).to_lowercase().as_str() {
                "true" | "yes" | "y" | "1" | "t" | "on" => Ok(Atom::Bool(true)),
                "false" | "no" | "n" | "0" | "f" | "off" => Ok(Atom::Bool(false)),
                _ => bad("cannot normalize string to boolean"),
            },
            _ => bad("cannot normalize to boolean"),
        },
        Kind::Empty => {
            if !truthy(v) {
                return if is_number(v) { bad("numeric zero is not considered empty") } else { Ok(Atom::None) };
            }
            match v {
                Value::String(s) if ["n/a", "na", "nan", "null", "none"].contains(&s.as_str()) => Ok(Atom::None),
                _ => bad("value is not an empty representation"),
            }
        }
        Kind::Currency => {
            if !truthy(v) && !is_number(v) {
                return bad("currency value is empty or none");
            }
            let mut text = py_str(v);
            let negative = text.starts_with('-');
            if negative {
                text = text.replace('-', "");
            }
            let sep = if text.rfind('.').map_or(-1, |i| i as i64) > text.rfind(',').map_or(-1, |i| i as i64) {
                '.'
            } else {
                ','
            };
            let unparsed = || VerifiedError::Unparsed { kind: "currency", text: text.clone() };
            let amount = parse::price_amount(&text, sep).ok_or_else(unparsed)?;
            let a = parse::scaled(amount).ok_or_else(unparsed)?;
            Ok(Atom::Amount(if negative { -a } else { a }))
        }
        Kind::Date => {
            let Value::String(s) = v else { return bad("a date must be text") };
            if s.is_empty() {
                return bad("empty date value");
            }
            let mut spaced = String::with_capacity(s.len());
            let chars: Vec<char> = s.chars().collect();
            for (i, c) in chars.iter().enumerate() {
                spaced.push(*c);
                if *c == ',' && chars.get(i + 1) != Some(&' ') {
                    spaced.push(' ');
                }
            }
            match parse::parse_date(&spaced, parse::today()) {
                Some((y, m, d)) => Ok(Atom::Text(format!("{y:04}-{m:02}-{d:02}"))),
                None => bad("unable to parse date"),
            }
        }
        Kind::Month => {
            if let Some(f) = number(v) {
                if f.fract() != 0.0 {
                    return bad("month must be a whole number");
                }
                return parse::month_name(f as u32)
                    .filter(|_| f >= 1.0)
                    .map(|m| Atom::Text(m.to_string()))
                    .ok_or_else(|| VerifiedError::MonthOutOfRange(f.to_string()));
            }
            if !truthy(v) {
                return bad("empty month value");
            }
            let text = py_str(v);
            let text = pytext::strip(&text);
            if text.is_empty() {
                return bad("empty month value");
            }
            if let Ok(n) = text.replace('_', "").parse::<i64>() {
                return u32::try_from(n)
                    .ok()
                    .and_then(parse::month_name)
                    .map(|m| Atom::Text(m.to_string()))
                    .ok_or_else(|| VerifiedError::MonthOutOfRange(n.to_string()));
            }
            match parse::parse_date(text, (2000, 1, 1)).and_then(|(_, m, _)| parse::month_name(m)) {
                Some(m) => Ok(Atom::Text(m.to_string())),
                None => bad("unable to parse month"),
            }
        }
        Kind::Duration => {
            if !truthy(v) {
                return bad("duration value is empty or none");
            }
            let text = py_str(v);
            if parse::py_float(&text).is_some() {
                return bad("duration must include a unit or time format");
            }
            parse::parse_duration(&text)
                .map(Atom::Float)
                .ok_or_else(|| VerifiedError::Unparsed { kind: "duration", text: text.clone() })
        }
        Kind::Distance => {
            if !truthy(v) && !is_number(v) {
                return bad("distance value is empty or none");
            }
            let text = kilometres(&py_str(v));
            if parse::py_float(&text).is_some() {
                return bad("distance must include a unit");
            }
            Ok(Atom::Float(parse::parse_distance(&text)?))
        }
        Kind::Coords => {
            if !truthy(v) {
                return bad("coordinate value is empty or none");
            }
            let float = |x: &Value| -> Option<f64> {
                match x {
                    Value::String(s) => parse::py_float(s),
                    other => number(other),
                }
            };
            let (lat, lon) = match v {
                Value::Object(map) => {
                    let find = |lat: bool| {
                        map.iter().find(|(k, _)| {
                            let k = k.to_lowercase();
                            if lat {
                                k.len() >= 2 && "latitude".starts_with(&k)
                            } else {
                                (k.len() >= 2 && "longitude".starts_with(&k)) || k == "lng"
                            }
                        })
                    };
                    match (find(true), find(false)) {
                        (Some((_, a)), Some((_, b))) => (float(a), float(b)),
                        _ => return bad("dictionary must contain latitude and longitude"),
                    }
                }
                Value::Array(items) if items.len() == 2 => (float(&items[0]), float(&items[1])),
                Value::String(s) => match parse::parse_coordinates(s) {
                    Some((a, b)) => (Some(a), Some(b)),
                    None => return bad("unable to parse coordinate string"),
                },
                _ => return bad("unsupported coordinate input"),
            };
            match (lat, lon) {
                (Some(lat), Some(lon)) if (-90.0..=90.0).contains(&lat) => {
                    Ok(Atom::Coords(lat, parse::normalize_longitude(lon)))
                }
                _ => bad("unable to parse coordinates"),
            }
        }
        Kind::Json => {
            let Value::String(s) = v else { return bad("jsonstring only accepts string input") };
            if s.is_empty() {
                return bad("json string is empty");
            }
            let parsed: Value = serde_json::from_str(s).map_err(|_| VerifiedError::InvalidJson(s.clone()))?;
            Ok(Atom::Text(json_sorted(&parsed)))
        }
        Kind::Markdown => {
            let Value::String(s) = v else { return bad("markdownstring only accepts string input") };
            if s.is_empty() {
                return bad("markdown string is empty");
            }
            Ok(Atom::Text(markdown(s)))
        }
        Kind::StrList => {
            if !truthy(v) {
                return bad("stringlist value is empty or none");
            }
            let text = py_str(v);
            let mut items: Vec<String> =
                text.split(',').map(|i| pytext::strip(i).to_string()).filter(|i| !i.is_empty()).collect();
            if items.is_empty() {
                return bad("no valid items in stringlist");
            }
            items.sort();
            Ok(Atom::List(items))
        }
        Kind::Url => {
            let Value::String(s) = v else { return bad("a URL must be text") };
            urlnorm::normalize(s, cx.sites, cx.url).map(Atom::Url)
        }
    }
}

/// `re.sub(r"(\d+(?:\.\d+)?)\s*k(?=\s|$)", r"\1 km", s, flags=re.I)`.
fn kilometres(s: &str) -> String {
    static RE: std::sync::LazyLock<regex::Regex> =
        std::sync::LazyLock::new(|| regex::Regex::new(r"(?i)(\d+(?:\.\d+)?)\s*k(\s|$)").expect("a valid pattern"));
    RE.replace_all(s, "${1} km${2}").into_owned()
}

/// `json.dumps(v, sort_keys=True, separators=(",", ":"), ensure_ascii=False)`.
pub fn json_sorted(v: &Value) -> String {
    match v {
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            let parts: Vec<String> = keys
                .iter()
                .map(|k| format!("{}:{}", Value::String((*k).clone()), json_sorted(&map[k.as_str()])))
                .collect();
            format!("{{{}}}", parts.join(","))
        }
        Value::Array(items) => format!("[{}]", items.iter().map(json_sorted).collect::<Vec<_>>().join(",")),
        Value::Number(n) if n.is_f64() => n.as_f64().map_or_else(|| n.to_string(), crate::evaluate::python::float_repr),
        other => other.to_string(),
    }
}

/// `MarkdownString._type_normalize`.
fn markdown(s: &str) -> String {
    use std::sync::LazyLock;
    static TRAILING: LazyLock<regex::Regex> = LazyLock::new(|| regex::Regex::new(r"(?m)[ \t]+$").expect("valid"));
    static BLANKS: LazyLock<regex::Regex> = LazyLock::new(|| regex::Regex::new(r"\n{3,}").expect("valid"));
    static HEADERS: LazyLock<regex::Regex> =
        LazyLock::new(|| regex::Regex::new(r"(?m)^(\s*)(#{1,6})[ \t]+").expect("valid"));
    static MARKERS: LazyLock<regex::Regex> =
        LazyLock::new(|| regex::Regex::new(r"(?m)^(\s*)[\*\+][ \t]+").expect("valid"));
    static INDENT: LazyLock<regex::Regex> = LazyLock::new(|| regex::Regex::new(r"(?m)^[ \t]+(-)").expect("valid"));
    static SPLIT_LINK: LazyLock<fancy_regex::Regex> =
        LazyLock::new(|| fancy_regex::Regex::new(r"\[([^\]]*?)\n\s*([^\]]*?)\](\([^\)]+\))").expect("valid"));
    static LINK_TEXT: LazyLock<regex::Regex> = LazyLock::new(|| regex::Regex::new(r"\[([^\]]+)\]").expect("valid"));
    static LINK_URL: LazyLock<fancy_regex::Regex> =
        LazyLock::new(|| fancy_regex::Regex::new(r"\(\s*([^\)]+?)\s*\)").expect("valid"));
    let c = s.replace("\r\n", "\n").replace('\r', "\n");
    let c = TRAILING.replace_all(&c, "");
    let c = BLANKS.replace_all(&c, "\n\n");
    let c = HEADERS.replace_all(&c, "${1}${2} ");
    let c = MARKERS.replace_all(&c, "${1}- ");
    let c = INDENT.replace_all(&c, "  ${1}");
    let c = SPLIT_LINK.replace_all(&c, "[${1} ${2}]${3}");
    let c = LINK_TEXT
        .replace_all(&c, |m: &regex::Captures| format!("[{}]", m[1].split_whitespace().collect::<Vec<_>>().join(" ")));
    let c = LINK_URL.replace_all(&c, "(${1})");
    pytext::strip(&c).to_string()
}
