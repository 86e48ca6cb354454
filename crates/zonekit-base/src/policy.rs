//! Policy registries as tables: one `&[PolicyInfo<Make>]` per policy family (placements,
//! victims, file-system allocation, ...). Help text, name validation, `--param` checking and
//! the axes a grid may sweep all come from the table, so a policy's name and parameters are
//! written once, in its own file.
//!
//! ```
//! use zonekit_base::policy::{self, ParamInfo, Params, PolicyInfo, Role};
//!
//! type Make = fn(&policy::ParamReader) -> Result<u64, policy::PolicyError>;
//! const DOUBLE: PolicyInfo<Make> = PolicyInfo {
//!     name: "double",
//!     summary: "twice x",
//!     role: Role::Baseline,
//!     params: &[ParamInfo { name: "x", default: "21", summary: "the input" }],
//!     make: |p| Ok(p.u64("x")? * 2),
//! };
//! let table = [DOUBLE];
//! let (info, params) = policy::find(&table, "toy", "double").unwrap();
//! let reader = policy::ParamReader::new(info, &params).unwrap();
//! assert_eq!((info.make)(&reader).unwrap(), 42);
//! assert!(policy::find(&table, "toy", "triple").is_err());
//! ```

use std::collections::BTreeMap;
use std::fmt::Write;

/// Parameters given as `key=value` pairs.
pub type Params = BTreeMap<String, String>;

/// One parameter a policy takes, with its default (written once, here).
#[derive(Copy, Clone, Debug)]
pub struct ParamInfo {
    pub name: &'static str,
    pub default: &'static str,
    pub summary: &'static str,
}

/// What a policy is for in comparisons: the standard comparison runs every policy that is not a
/// [`Role::Variant`].
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Role {
    /// A published baseline the research compares against.
    Baseline,
    /// The research's own proposal.
    Proposed,
    /// Ours, beyond the research.
    Extension,
    /// Knows the future: a bound, not a policy a device could run.
    Oracle,
    /// A variant of another row (another constant, another aging function), for sweeps.
    Variant,
}

/// One row of a policy table.
#[derive(Copy, Clone, Debug)]
pub struct PolicyInfo<Make> {
    pub name: &'static str,
    pub summary: &'static str,
    pub role: Role,
    pub params: &'static [ParamInfo],
    /// Builds the policy from its parameters (read through a [`ParamReader`]).
    pub make: Make,
}

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum PolicyError {
    #[error("unknown {family} policy {name:?}; valid: {valid}")]
    Unknown { family: &'static str, name: String, valid: String },
    #[error("{policy} has no parameter {param:?}; {valid}")]
    UnknownParam { policy: &'static str, param: String, valid: String },
    #[error("{policy}: {param}={value}: {expected}")]
    BadValue { policy: &'static str, param: &'static str, value: String, expected: &'static str },
    #[error("{policy}: {reason}")]
    Invalid { policy: &'static str, reason: String },
}

/// Splits `NAME[:VALUE]`: the short form `d-choices:4` sets a one-parameter policy's parameter.
fn split_short_form(spec: &str) -> (&str, Option<&str>) {
    match spec.split_once(':') {
        Some((name, value)) => (name, Some(value)),
        None => (spec, None),
    }
}

/// Looks a policy up by `NAME` or `NAME:VALUE` (the value of its only parameter). Returns its
/// row and the parameters the short form set.
pub fn find<'a, M>(table: &'a [PolicyInfo<M>], family: &'static str, spec: &str) -> Result<(&'a PolicyInfo<M>, Params), PolicyError> {
    let (name, value) = split_short_form(spec);
    let unknown = || PolicyError::Unknown { family, name: spec.to_string(), valid: names(table).join(", ") };
    let info = table.iter().find(|p| p.name == name).ok_or_else(unknown)?;
    let mut params = Params::new();
    if let Some(v) = value {
        match info.params {
            [only] => {
                params.insert(only.name.to_string(), v.to_string());
            }
            _ => return Err(unknown()),
        }
    }
    Ok((info, params))
}

/// The names in a table, in table order.
pub fn names<M>(table: &[PolicyInfo<M>]) -> Vec<&'static str> {
    table.iter().map(|p| p.name).collect()
}

/// Checks that every key of `params` is a parameter of `info`.
pub fn check_params<M>(info: &PolicyInfo<M>, params: &Params) -> Result<(), PolicyError> {
    for key in params.keys() {
        if !info.params.iter().any(|p| p.name == key) {
            let valid = if info.params.is_empty() { "it takes none".to_string() } else { format!("valid: {}", info.params.iter().map(|p| p.name).collect::<Vec<_>>().join(", ")) };
            return Err(PolicyError::UnknownParam { policy: info.name, param: key.clone(), valid });
        }
    }
    Ok(())
}

/// One line per policy: name, summary, and its parameters with defaults (for `--help`).
/// The width policy help keeps to.
const HELP_COLUMNS: usize = 100;

pub fn help<M>(table: &[PolicyInfo<M>]) -> String {
    let width = table.iter().map(|p| p.name.len()).max().unwrap_or(0);
    let mut out = String::new();
    for p in table {
        let mut text = p.summary.to_string();
        if !p.params.is_empty() {
            let params: Vec<String> = p.params.iter().map(|q| format!("{}={}", q.name, q.default)).collect();
            let _ = write!(text, " [{}]", params.join(", "));
        }
        // Wrapped to a terminal's 100 columns, continuation lines under the summary.
        let mut line = format!("{:width$} ", p.name);
        let indent = " ".repeat(width + 2);
        for word in text.split_whitespace() {
            if line.len() > indent.len() && line.chars().count() + 1 + word.chars().count() > HELP_COLUMNS {
                out.push_str(line.trim_end());
                out.push('\n');
                line = indent.clone();
            } else {
                line.push(' ');
            }
            line.push_str(word);
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}

/// Reads a policy's parameters with the defaults its table row declares. Reading a name the
/// row does not declare is a bug in the policy's file and panics.
pub struct ParamReader<'a> {
    info_name: &'static str,
    declared: &'static [ParamInfo],
    params: &'a Params,
}

impl<'a> ParamReader<'a> {
    /// Checks `params` against the row first: an unknown key is an error, not ignored.
    pub fn new<M>(info: &PolicyInfo<M>, params: &'a Params) -> Result<ParamReader<'a>, PolicyError> {
        check_params(info, params)?;
        Ok(ParamReader { info_name: info.name, declared: info.params, params })
    }

    pub fn policy(&self) -> &'static str {
        self.info_name
    }

    fn raw(&self, name: &'static str) -> &str {
        let declared = self.declared.iter().find(|p| p.name == name).unwrap_or_else(|| panic!("{} reads parameter {name:?} that its table row does not declare", self.info_name));
        self.params.get(name).map_or(declared.default, |v| v.as_str())
    }

    pub fn f64(&self, name: &'static str) -> Result<f64, PolicyError> {
        let v = self.raw(name);
        v.parse::<f64>().ok().filter(|x| x.is_finite()).ok_or_else(|| self.bad(name, v, "not a number"))
    }

    pub fn u64(&self, name: &'static str) -> Result<u64, PolicyError> {
        let v = self.raw(name);
        v.parse().map_err(|_| self.bad(name, v, "not a whole number"))
    }

    /// One of `options`, by name.
    pub fn choice(&self, name: &'static str, options: &[&'static str]) -> Result<&'static str, PolicyError> {
        let v = self.raw(name);
        options.iter().copied().find(|o| *o == v).ok_or_else(|| self.invalid(format!("{name}={v}: expected one of {}", options.join(", "))))
    }

    fn bad(&self, param: &'static str, value: &str, expected: &'static str) -> PolicyError {
        PolicyError::BadValue { policy: self.info_name, param, value: value.to_string(), expected }
    }

    /// An error for a combination of values the policy cannot run with.
    pub fn invalid(&self, reason: impl Into<String>) -> PolicyError {
        PolicyError::Invalid { policy: self.info_name, reason: reason.into() }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    type Make = fn(&ParamReader) -> Result<f64, PolicyError>;
    const TABLE: &[PolicyInfo<Make>] = &[
        PolicyInfo { name: "plain", summary: "no parameters", role: Role::Baseline, params: &[], make: |_| Ok(0.0) },
        PolicyInfo { name: "scaled", summary: "one parameter", role: Role::Variant, params: &[ParamInfo { name: "k", default: "1.5", summary: "scale" }], make: |p| p.f64("k") },
    ];

    fn make(spec: &str, extra: &[(&str, &str)]) -> Result<f64, PolicyError> {
        let (info, mut params) = find(TABLE, "toy", spec)?;
        params.extend(extra.iter().map(|(k, v)| (k.to_string(), v.to_string())));
        let reader = ParamReader::new(info, &params)?;
        (info.make)(&reader)
    }

    #[test]
    fn defaults_short_form_and_explicit_values() {
        assert_eq!(make("scaled", &[]), Ok(1.5));
        assert_eq!(make("scaled:4", &[]), Ok(4.0));
        assert_eq!(make("scaled", &[("k", "2")]), Ok(2.0));
        let info = &PolicyInfo { name: "pick", summary: "", role: Role::Variant, params: &[ParamInfo { name: "how", default: "a", summary: "" }], make: () };
        let params = Params::from([("how".to_string(), "c".to_string())]);
        let reader = ParamReader::new(info, &params).unwrap();
        assert_eq!(reader.choice("how", &["a", "b"]).unwrap_err().to_string(), "pick: how=c: expected one of a, b");
        assert_eq!(ParamReader::new(info, &Params::new()).unwrap().choice("how", &["a", "b"]), Ok("a"));
    }

    #[test]
    fn unknown_names_params_and_bad_values_are_refused() {
        assert!(matches!(make("nope", &[]), Err(PolicyError::Unknown { .. })));
        assert!(matches!(make("plain:3", &[]), Err(PolicyError::Unknown { .. })));
        assert!(matches!(make("plain", &[("k", "1")]), Err(PolicyError::UnknownParam { .. })));
        assert!(matches!(make("scaled", &[("k", "x")]), Err(PolicyError::BadValue { .. })));
        assert!(matches!(make("scaled", &[("k", "NaN")]), Err(PolicyError::BadValue { .. })));
        let e = make("scaled", &[("q", "1")]).unwrap_err().to_string();
        assert!(e.contains("valid: k"), "{e}");
    }

    #[test]
    fn help_lists_every_row_with_its_defaults() {
        let h = help(TABLE);
        assert!(h.contains("plain") && h.contains("scaled") && h.contains("[k=1.5]"), "{h}");
    }
}
