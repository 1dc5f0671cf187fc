//! `ValueNormalizer` (`core/evaluation/value_normalizer.py`): a raw value
//! and a JSON schema give a normalized value ([`Norm`]): the schema's `format`
//! (else its `type`) picks the data type of each leaf, `array` and `object`
//! schemas recurse, and a list where a single value is expected lists
//! alternatives. On the expected side (`strict`) a value that does not
//! normalize is an error; on the agent's side it is kept raw, and then
//! compares unequal to any normalized value.

use serde_json::{Map, Value};

use super::error::VerifiedError;
use super::types::{Ctx, Kind, Typed};

/// A value after normalization.
#[derive(Debug, Clone, PartialEq)]
pub enum Norm {
    /// Kept as it came (`None` included): a failed normalization, or a value no schema types.
    Raw(Value),
    Typed(Typed),
    /// A tuple.
    Seq(Vec<Norm>),
    /// A dict, in its key order.
    Map(Vec<(String, Norm)>),
}

impl Norm {
    pub const NONE: Norm = Norm::Raw(Value::Null);

    pub fn is_none(&self) -> bool {
        matches!(self, Norm::Raw(Value::Null))
    }

    /// What the package reports (`.normalized` of typed leaves).
    pub fn to_json(&self) -> Value {
        match self {
            Norm::Raw(v) => v.clone(),
            Norm::Typed(t) => t.to_json(),
            Norm::Seq(items) => Value::Array(items.iter().map(Norm::to_json).collect()),
            Norm::Map(entries) => Value::Object(entries.iter().map(|(k, v)| (k.clone(), v.to_json())).collect()),
        }
    }

    pub fn get(&self, key: &str) -> Option<&Norm> {
        match self {
            Norm::Map(entries) => entries.iter().find(|(k, _)| k == key).map(|(_, v)| v),
            _ => None,
        }
    }
}

type R = Result<Norm, VerifiedError>;

/// `_get_normalized_type_class(item_type)`.
fn type_class(item_type: Option<&Value>) -> Result<Kind, VerifiedError> {
    let Some(t) = item_type else { return Ok(Kind::Str) };
    let name = t.get("format").and_then(Value::as_str).filter(|f| !f.is_empty());
    let name = name.or_else(|| t.get("type").and_then(Value::as_str)).unwrap_or("string");
    Kind::of(name)
}

fn simple(v: &Value, item_type: Option<&Value>, strict: bool, cx: &Ctx) -> R {
    let kind = type_class(item_type)?;
    match Typed::new(kind, v, cx) {
        Ok(t) => Ok(Norm::Typed(t)),
        Err(e) if strict => Err(VerifiedError::Leaf { value: v.clone(), kind: kind.name(), cause: Box::new(e) }),
        Err(_) => Ok(Norm::Raw(v.clone())),
    }
}

fn parse_json(s: &str) -> Option<Value> {
    serde_json::from_str(s).ok()
}

/// `normalize_array(value, schema, strict)`, what the agent response evaluator calls.
pub fn normalize_array(value: &Value, schema: Option<&Map<String, Value>>, strict: bool, cx: &Ctx) -> R {
    let mut value = value.clone();
    if !strict {
        if let Value::String(s) = &value {
            if let Some(p @ Value::Array(_)) = parse_json(s) {
                value = p;
            }
        }
        if !value.is_array() {
            value = Value::Array(vec![value]);
        }
    }
    let Value::Array(items) = &value else {
        if strict {
            return Err(VerifiedError::NotArrayProperty(value));
        }
        return Ok(Norm::NONE);
    };
    let (items_schema, items_type) = match schema {
        None => (None, "string".to_string()),
        Some(s) => {
            let t = s.get("type").and_then(Value::as_str).unwrap_or("array");
            if t != "array" {
                return Err(VerifiedError::SchemaNotArray(t.to_string()));
            }
            let items = s.get("items").cloned().unwrap_or_else(|| Value::Object(Map::new()));
            let it = items.get("type").and_then(Value::as_str).unwrap_or("string").to_string();
            (Some(items), it)
        }
    };
    let mut out = Vec::with_capacity(items.len());
    for item in items {
        if items_type == "object" {
            let Some(Value::Object(os)) = &items_schema else {
                return Err(VerifiedError::NoItemsSchema);
            };
            out.push(object_or_array(item, os, strict, cx)?);
        } else {
            out.push(simple(item, items_schema.as_ref(), strict, cx)?);
        }
    }
    Ok(Norm::Seq(out))
}

/// `normalize(value, schema, strict)`, what post data and query parameters go through.
pub fn normalize(value: &Value, schema: &Value, strict: bool, cx: &Ctx) -> R {
    if !super::pytext::truthy(value) {
        return Ok(Norm::NONE);
    }
    let mut schema = schema.clone();
    if !super::pytext::truthy(&schema) {
        if value.is_object() {
            schema = serde_json::json!({"type": "object"});
        } else if value.is_array() {
            schema = serde_json::json!({"type": "array"});
        }
    }
    let (t, is_array) = extract_type(&schema)?;
    match t {
        TypeRef::Object(os) => object_or_array(value, &os, strict, cx),
        TypeRef::Name(name) if is_array => {
            if !value.is_array() {
                if strict {
                    return Err(VerifiedError::NotArray(value.clone()));
                }
                return Ok(Norm::Raw(value.clone()));
            }
            array_of(value, &TypeRef::Name(name), strict, cx)
        }
        TypeRef::Name(name) => {
            let kind = Kind::of(&name)?;
            match Typed::new(kind, value, cx) {
                Ok(t) => Ok(Norm::Typed(t)),
                Err(e) if strict => Err(e),
                Err(_) => Ok(Norm::Raw(value.clone())),
            }
        }
    }
}

/// A schema's type: a registry name, or an object schema.
enum TypeRef {
    Name(String),
    Object(Map<String, Value>),
}

/// `_extract_type_from_schema`: (type, is_array).
fn extract_type(schema: &Value) -> Result<(TypeRef, bool), VerifiedError> {
    let Value::Object(s) = schema else { return Err(VerifiedError::SchemaNotDict(schema.clone())) };
    let t = s.get("type").and_then(Value::as_str);
    if t == Some("array") {
        let items = s.get("items").cloned().unwrap_or_else(|| Value::Object(Map::new()));
        let (inner, _) = extract_type(&items)?;
        return Ok((inner, true));
    }
    if t == Some("object") {
        return Ok((TypeRef::Object(s.clone()), false));
    }
    if let Some(f) = s.get("format").and_then(Value::as_str).filter(|f| !f.is_empty()) {
        return Ok((TypeRef::Name(f.to_string()), false));
    }
    Ok((TypeRef::Name(t.filter(|t| !t.is_empty()).unwrap_or("string").to_string()), false))
}

/// `_normalize_array(value, type_name, strict)`.
fn array_of(value: &Value, t: &TypeRef, strict: bool, cx: &Ctx) -> R {
    let mut value = value.clone();
    if let Value::String(s) = &value {
        if let Some(p @ Value::Array(_)) = parse_json(s) {
            value = p;
        }
    }
    let Value::Array(items) = &value else {
        if strict {
            return Err(VerifiedError::NotArrayProperty(value));
        }
        return Ok(Norm::Raw(value));
    };
    match t {
        TypeRef::Object(os) => object_or_array(&value, os, strict, cx),
        TypeRef::Name(name) => {
            let kind = Kind::of(name)?;
            let mut out = Vec::with_capacity(items.len());
            for (i, item) in items.iter().enumerate() {
                match Typed::new(kind, item, cx) {
                    Ok(t) => out.push(Norm::Typed(t)),
                    Err(e) if strict => {
                        return Err(VerifiedError::Element { index: i, item: item.clone(), cause: Box::new(e) })
                    }
                    Err(_) => out.push(Norm::Raw(item.clone())),
                }
            }
            Ok(Norm::Seq(out))
        }
    }
}

/// `_normalize_object_or_array`.
fn object_or_array(value: &Value, schema: &Map<String, Value>, strict: bool, cx: &Ctx) -> R {
    match value {
        Value::Array(items) => {
            Ok(Norm::Seq(items.iter().map(|o| object(o, schema, strict, cx)).collect::<Result<Vec<_>, _>>()?))
        }
        other => object(other, schema, strict, cx),
    }
}

/// `_normalize_object`: each property by its schema, a property without one as a string.
fn object(obj: &Value, schema: &Map<String, Value>, strict: bool, cx: &Ctx) -> R {
    let mut obj = obj.clone();
    if let Value::String(s) = &obj {
        if let Some(p @ Value::Object(_)) = parse_json(s) {
            obj = p;
        }
    }
    let Value::Object(map) = &obj else {
        if strict {
            return Err(VerifiedError::NotDict(obj));
        }
        return Ok(Norm::Raw(obj));
    };
    let empty = Map::new();
    let properties = schema.get("properties").and_then(Value::as_object).unwrap_or(&empty);
    let mut out = Vec::with_capacity(map.len());
    for (name, v) in map {
        if v.is_null() {
            out.push((name.clone(), Norm::NONE));
            continue;
        }
        let Some(prop_schema) = properties.get(name) else {
            match Typed::new(Kind::Str, v, cx) {
                Ok(t) => out.push((name.clone(), Norm::Typed(t))),
                Err(e) if strict => return Err(e),
                Err(_) => out.push((name.clone(), Norm::Raw(v.clone()))),
            }
            continue;
        };
        let result = (|| -> R {
            let (t, is_array) = extract_type(prop_schema)?;
            if is_array {
                return array_of(v, &t, strict, cx);
            }
            match t {
                TypeRef::Name(n) => match Kind::of(&n) {
                    Ok(kind) => Typed::new(kind, v, cx).map(Norm::Typed),
                    Err(_) => Typed::new(Kind::Str, v, cx).map(Norm::Typed),
                },
                TypeRef::Object(os) => object(v, &os, strict, cx),
            }
        })();
        match result {
            Ok(n) => out.push((name.clone(), n)),
            Err(e) if strict => {
                return Err(VerifiedError::Property { name: name.clone(), value: v.clone(), cause: Box::new(e) })
            }
            Err(_) => out.push((name.clone(), Norm::Raw(v.clone()))),
        }
    }
    Ok(Norm::Map(out))
}
