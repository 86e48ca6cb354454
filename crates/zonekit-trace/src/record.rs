//! The one record type every reader produces, trace errors, and spec errors.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Op {
    Read,
    Write,
}

/// One I/O request, normalised: time in µs (the trace's own epoch), offset and length in bytes.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Record {
    pub time_us: u64,
    pub volume: u32,
    pub offset_bytes: u64,
    pub len_bytes: u64,
    pub op: Op,
}

#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TraceError {
    /// A malformed record: where, which field, what was wrong.
    #[error("{}:{location}: {field} {value:?}: {reason}", path.display())]
    Parse { path: PathBuf, location: Location, field: &'static str, value: String, reason: String },
    #[error("{}: {reason}", path.display())]
    Decompress { path: PathBuf, reason: String },
    #[error("{}: {reason}", path.display())]
    Format { path: PathBuf, reason: String },
    /// (The OS error is part of the message, not a `source()`, so error chains print it once.)
    #[error("{context}: {error}")]
    Io { context: String, error: std::io::Error },
    #[error("{0}")]
    Invalid(String),
}

/// A spec that cannot be used (a workload, format name, column mapping, sampling or sharding
/// setting): the message says which and why.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct SpecError(pub String);

impl SpecError {
    /// The message, as [`Display`](std::fmt::Display) prints it.
    pub fn message(&self) -> &str {
        &self.0
    }
}

impl From<String> for SpecError {
    fn from(message: String) -> SpecError {
        SpecError(message)
    }
}

impl From<&str> for SpecError {
    fn from(message: &str) -> SpecError {
        SpecError(message.to_string())
    }
}

/// A spec error met while reading: [`TraceError::Invalid`] with the same message.
impl From<SpecError> for TraceError {
    fn from(e: SpecError) -> TraceError {
        TraceError::Invalid(e.0)
    }
}

/// Where in a trace file a record is: a text line or a byte offset.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Location {
    Line(u64),
    Byte(u64),
}

impl std::fmt::Display for Location {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Location::Line(n) => write!(f, "line {n}"),
            Location::Byte(n) => write!(f, "byte {n}"),
        }
    }
}

pub type Result<T, E = TraceError> = std::result::Result<T, E>;

/// A field that failed to parse, before the reader adds the file and line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FieldError {
    pub field: &'static str,
    pub value: String,
    pub reason: String,
}

impl FieldError {
    pub fn new(field: &'static str, value: &str, reason: impl Into<String>) -> FieldError {
        FieldError { field, value: value.chars().take(80).collect(), reason: reason.into() }
    }
}

/// Parses a non-negative decimal (`12`, `12.5`, `1.25e3`) scaled by 10^`scale` into an integer,
/// exactly for plain decimals: `parse_scaled("1.000123", 6) == 1_000_123`. Digits beyond the
/// scale are truncated.
pub fn parse_scaled(field: &'static str, s: &str, scale: u32) -> Result<u64, FieldError> {
    let t = s.trim();
    if t.is_empty() {
        return Err(FieldError::new(field, s, "empty"));
    }
    if t.contains(['e', 'E']) {
        let v: f64 = t.parse().map_err(|_| FieldError::new(field, s, "not a number"))?;
        if !(v.is_finite() && v >= 0.0) {
            return Err(FieldError::new(field, s, "not a non-negative number"));
        }
        return Ok((v * 10f64.powi(scale as i32)) as u64);
    }
    let (int, frac) = t.split_once('.').unwrap_or((t, ""));
    let digits = |d: &str| !d.is_empty() && d.bytes().all(|b| b.is_ascii_digit());
    if !(digits(int) || (int.is_empty() && digits(frac))) || !(frac.is_empty() || digits(frac)) {
        return Err(FieldError::new(field, s, "not a non-negative decimal number"));
    }
    let mut value: u64 = if int.is_empty() { 0 } else { int.parse().map_err(|_| FieldError::new(field, s, "too large"))? };
    let overflow = || FieldError::new(field, s, "too large");
    let frac = frac.as_bytes();
    for i in 0..scale as usize {
        let d = frac.get(i).map_or(0, |b| (b - b'0') as u64);
        value = value.checked_mul(10).and_then(|v| v.checked_add(d)).ok_or_else(overflow)?;
    }
    Ok(value)
}

/// Parses an unsigned integer field.
pub fn parse_u64(field: &'static str, s: &str) -> Result<u64, FieldError> {
    s.trim().parse().map_err(|_| FieldError::new(field, s, "not a non-negative integer"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scaled_decimals_are_exact() {
        assert_eq!(parse_scaled("t", "1.000123", 6).unwrap(), 1_000_123);
        assert_eq!(parse_scaled("t", "1466036002.927465629", 6).unwrap(), 1_466_036_002_927_465);
        assert_eq!(parse_scaled("t", "7", 3).unwrap(), 7000);
        assert_eq!(parse_scaled("t", ".5", 1).unwrap(), 5);
        assert_eq!(parse_scaled("t", "1.5e3", 0).unwrap(), 1500);
        for bad in ["", "-1", "1.2.3", "abc", "1e999", "99999999999999999999"] {
            assert!(parse_scaled("t", bad, 6).is_err(), "{bad:?}");
        }
    }
}
