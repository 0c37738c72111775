//! A minimal JSON value and printer for the replay's report. (A JSON crate as a dependency of
//! the library would add `PartialEq` impls for integers that break type inference in code
//! using the library, e.g. `assert_eq!(x, (0..n).sum())`; the report needs only this much.)

use std::fmt::{self, Write};

/// A JSON value.
#[derive(Clone, Debug, PartialEq)]
pub enum Json {
    /// `null`
    Null,
    /// `true` or `false`
    Bool(bool),
    /// A whole number.
    Int(u64),
    /// A number with a fraction (non-finite values print as `null`).
    Float(f64),
    /// A string.
    Str(String),
    /// An array.
    Array(Vec<Json>),
    /// An object, fields in order.
    Object(Vec<(String, Json)>),
}

impl Json {
    /// An object from `(name, value)` pairs.
    pub fn object<const N: usize>(fields: [(&str, Json); N]) -> Json {
        Json::Object(
            fields
                .into_iter()
                .map(|(k, v)| (k.to_string(), v))
                .collect(),
        )
    }

    fn write(&self, f: &mut fmt::Formatter<'_>, indent: usize) -> fmt::Result {
        const STEP: usize = 2;
        match self {
            Json::Null => f.write_str("null"),
            Json::Bool(b) => write!(f, "{b}"),
            Json::Int(n) => write!(f, "{n}"),
            Json::Float(x) if x.is_finite() => write!(f, "{x}"),
            Json::Float(_) => f.write_str("null"),
            Json::Str(s) => write_string(f, s),
            Json::Array(items) if items.is_empty() => f.write_str("[]"),
            Json::Object(fields) if fields.is_empty() => f.write_str("{}"),
            Json::Array(items) => {
                f.write_str("[\n")?;
                for (i, item) in items.iter().enumerate() {
                    write!(f, "{:width$}", "", width = indent + STEP)?;
                    item.write(f, indent + STEP)?;
                    f.write_str(if i + 1 < items.len() { ",\n" } else { "\n" })?;
                }
                write!(f, "{:width$}]", "", width = indent)
            }
            Json::Object(fields) => {
                f.write_str("{\n")?;
                for (i, (k, v)) in fields.iter().enumerate() {
                    write!(f, "{:width$}", "", width = indent + STEP)?;
                    write_string(f, k)?;
                    f.write_str(": ")?;
                    v.write(f, indent + STEP)?;
                    f.write_str(if i + 1 < fields.len() { ",\n" } else { "\n" })?;
                }
                write!(f, "{:width$}}}", "", width = indent)
            }
        }
    }
}

fn write_string(f: &mut fmt::Formatter<'_>, s: &str) -> fmt::Result {
    f.write_char('"')?;
    for c in s.chars() {
        match c {
            '"' => f.write_str("\\\"")?,
            '\\' => f.write_str("\\\\")?,
            '\n' => f.write_str("\\n")?,
            '\r' => f.write_str("\\r")?,
            '\t' => f.write_str("\\t")?,
            c if (c as u32) < 0x20 => write!(f, "\\u{:04x}", c as u32)?,
            c => f.write_char(c)?,
        }
    }
    f.write_char('"')
}

/// Pretty-printed, two spaces per level.
impl fmt::Display for Json {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.write(f, 0)
    }
}

impl From<bool> for Json {
    fn from(b: bool) -> Json {
        Json::Bool(b)
    }
}
impl From<u64> for Json {
    fn from(n: u64) -> Json {
        Json::Int(n)
    }
}
impl From<usize> for Json {
    fn from(n: usize) -> Json {
        Json::Int(n as u64)
    }
}
impl From<f64> for Json {
    fn from(x: f64) -> Json {
        Json::Float(x)
    }
}
impl From<&str> for Json {
    fn from(s: &str) -> Json {
        Json::Str(s.to_string())
    }
}
impl From<String> for Json {
    fn from(s: String) -> Json {
        Json::Str(s)
    }
}
impl<T: Into<Json>> From<Option<T>> for Json {
    fn from(v: Option<T>) -> Json {
        v.map_or(Json::Null, Into::into)
    }
}
impl<T: Into<Json>> From<Vec<T>> for Json {
    fn from(v: Vec<T>) -> Json {
        Json::Array(v.into_iter().map(Into::into).collect())
    }
}
