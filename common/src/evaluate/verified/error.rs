//! Why a WebArena-Verified evaluator raised: one variant per exception the
//! package raises where this port reproduces it, each printing the package's
//! message, so an evaluator's error reads as the package's does
//! (`tests/score_webarena_verified.rs` compares the two). The URL,
//! data-type, normalizer, comparator and response modules call each other
//! (a URL's query is normalized by a schema whose leaves may be URLs), so
//! they share this one enum; an error inside a value keeps the value's
//! context around it ([`VerifiedError::Property`] and its kin).

use serde_json::Value;

use super::parse::DistanceError;

/// Why a value, a schema or a response could not be evaluated.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum VerifiedError {
    /// A placeholder URL that no site of the task renders (strict side).
    #[error("no site of the task matched the template: {0}")]
    NoSiteForTemplate(String),
    /// A URL on no site of the task (strict side).
    #[error("the URL {0} is on none of the task's sites")]
    OffSites(String),
    #[error("empty URL value")]
    EmptyUrl,
    /// A URL that `url-normalize` gives nothing for.
    #[error("invalid URL: {0:?}")]
    InvalidUrl(String),
    #[error("invalid SCP-like URL format: {0}")]
    InvalidScpUrl(String),
    /// A host with an unbalanced `[` or `]`, as `urlsplit` raises.
    #[error("invalid IPv6 URL: {0}")]
    InvalidIpv6Url(String),
    /// A data type of the registry that this port does not reproduce.
    #[error("the type {0:?} is not reproduced here")]
    TypeNotReproduced(String),
    #[error("unknown type name: {0:?} during normalization")]
    UnknownType(String),
    /// A list of alternatives with fewer than two.
    #[error("alternatives require 2+ items, got {raw} with {count} item(s)")]
    TooFewAlternatives { raw: Value, count: usize },
    /// A value its type refuses; `why` is the type's complaint.
    #[error("{why}: {value}")]
    Refused { why: &'static str, value: Value },
    /// Text that does not parse as a `kind` (currency, duration).
    #[error("unable to parse {kind}: {text}")]
    Unparsed { kind: &'static str, text: String },
    /// A month number outside 1..=12, as it was read.
    #[error("month number out of range (1-12): {0}")]
    MonthOutOfRange(String),
    #[error("invalid json string: {0:?}")]
    InvalidJson(String),
    #[error(transparent)]
    Distance(#[from] DistanceError),
    /// A value where the schema expects an array (a property, or an array schema).
    #[error("property '{0}' schema expects array")]
    NotArrayProperty(Value),
    #[error("schema expects array but got {0}")]
    NotArray(Value),
    #[error("schema type must be 'array', got: {0:?}")]
    SchemaNotArray(String),
    #[error("items_schema must be provided when items_type is 'object'")]
    NoItemsSchema,
    #[error("schema must be a dict, got {0}")]
    SchemaNotDict(Value),
    #[error("expected dict for object normalization, got {0}")]
    NotDict(Value),
    /// A leaf of the expected side that does not normalize to its type.
    #[error("failed to normalize value {value} with type {kind}: {cause}")]
    Leaf { value: Value, kind: &'static str, cause: Box<VerifiedError> },
    #[error("failed to normalize array element at index {index}: {item}: {cause}")]
    Element { index: usize, item: Value, cause: Box<VerifiedError> },
    #[error("failed to normalize property '{name}': {value}: {cause}")]
    Property { name: String, value: Value, cause: Box<VerifiedError> },
    /// An expected object left with no key (every expected post field ignored): it checks nothing.
    #[error("{path}: expected object must have at least one key")]
    EmptyExpectedObject { path: String },
    /// A response field that must be text holds a `py_type` (Python's `AttributeError`).
    #[error("'{py_type}' object has no attribute 'strip' (the response's {key})")]
    NotText { py_type: &'static str, key: &'static str },
    /// `task_type` given both as itself and as `performed_operation`.
    #[error("duplicate key '{0}' found during normalization")]
    DuplicateKey(&'static str),
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn nested_errors_print_the_packages_message_around_the_cause() {
        let leaf = VerifiedError::Refused { why: "unable to parse date", value: json!("soon") };
        let e = VerifiedError::Property {
            name: "due".into(),
            value: json!(["soon"]),
            cause: Box::new(VerifiedError::Element { index: 0, item: json!("soon"), cause: Box::new(leaf) }),
        };
        assert_eq!(
            e.to_string(),
            r#"failed to normalize property 'due': ["soon"]: failed to normalize array element at index 0: "soon": unable to parse date: "soon""#
        );
        assert_eq!(VerifiedError::InvalidUrl("a b".into()).to_string(), r#"invalid URL: "a b""#);
        assert_eq!(VerifiedError::from(DistanceError::Shape("12".into())).to_string(), r#"cannot parse distance "12""#);
    }
}
