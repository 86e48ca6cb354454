//! The verdict rules: a claim's measurements judged against the seed's value or ordering by its
//! margin, then combined into one verdict.

use std::fmt;

/// A row's verdict. The first three are computed; the last three are declared in the claims
/// file, each with a note saying why.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Verdict {
    Reproduced,
    Partly,
    NotReproduced,
    ByConstruction,
    Calibrated,
    NotAddressed,
}

impl Verdict {
    pub const ALL: [Verdict; 6] = [Verdict::Reproduced, Verdict::Partly, Verdict::NotReproduced, Verdict::ByConstruction, Verdict::Calibrated, Verdict::NotAddressed];

    pub fn name(self) -> &'static str {
        match self {
            Verdict::Reproduced => "reproduced",
            Verdict::Partly => "partly",
            Verdict::NotReproduced => "not reproduced",
            Verdict::ByConstruction => "by construction",
            Verdict::Calibrated => "calibrated to this cell",
            Verdict::NotAddressed => "not addressed",
        }
    }

    /// The verdicts a claims file declares (its `kind` column), by name.
    pub fn declared(name: &str) -> Option<Verdict> {
        [Verdict::ByConstruction, Verdict::Calibrated, Verdict::NotAddressed].into_iter().find(|v| v.name() == name)
    }
}

impl fmt::Display for Verdict {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The margin that decides a claim: a share of the seed's value (of the lower side's, for an
/// ordering), or an amount in the claim's unit.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Margin {
    Relative(f64),
    Absolute(f64),
}

impl Margin {
    /// `"10 %"` (relative) or `"0.5"` (absolute, in the claim's unit); anything after the
    /// number (and the `%`) is the margin's provenance, shown but not read.
    pub fn parse(text: &str) -> Result<Margin, String> {
        let t = text.trim_start();
        let end = t.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(t.len());
        let amount: f64 = t[..end].parse().map_err(|_| format!("margin `{text}`: it starts with a number (`10 %` or `0.5`)"))?;
        if !(amount >= 0.0) {
            return Err(format!("margin `{text}`: negative"));
        }
        Ok(if t[end..].trim_start().starts_with('%') { Margin::Relative(amount / 100.0) } else { Margin::Absolute(amount) })
    }

    /// The allowed distance around `reference`.
    fn allowed(self, reference: f64) -> f64 {
        match self {
            Margin::Relative(share) => share * reference.abs(),
            Margin::Absolute(amount) => amount,
        }
    }
}

/// One measurement judged.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// Within the margin of the seed's value; or higher by at least the margin, for an ordering.
    Holds,
    /// An ordering whose direction holds, by less than the margin.
    UnderMargin,
    /// Outside the margin; or an ordering tied or reversed.
    Fails,
}

impl Outcome {
    pub fn describe(self, ordering: bool) -> &'static str {
        match (self, ordering) {
            (Outcome::Holds, false) => "within",
            (Outcome::Holds, true) => "by the margin",
            (Outcome::UnderMargin, _) => "under the margin",
            (Outcome::Fails, false) => "outside",
            (Outcome::Fails, true) => "reversed or tied",
        }
    }
}

/// Floating-point slack: a value exactly at the margin holds.
const EPS: f64 = 1e-9;

/// A value claim: ours within the margin of the seed's.
pub fn judge_value(seed: f64, ours: f64, margin: Margin) -> Outcome {
    if (ours - seed).abs() <= margin.allowed(seed) + EPS {
        Outcome::Holds
    } else {
        Outcome::Fails
    }
}

/// An ordering claim, `higher` stated above `lower`: holds when higher by at least the margin
/// (a share of `lower`, if relative), under the margin when higher by less, fails otherwise.
pub fn judge_ordering(higher: f64, lower: f64, margin: Margin) -> Outcome {
    let gap = higher - lower;
    if gap <= EPS {
        Outcome::Fails
    } else if gap + EPS >= margin.allowed(lower) {
        Outcome::Holds
    } else {
        Outcome::UnderMargin
    }
}

/// A claim's verdict from its measurements: reproduced when every one holds, not reproduced
/// when every one fails, partly otherwise (some hold and some fail, or an ordering holds under
/// the margin).
pub fn combine(outcomes: &[Outcome]) -> Verdict {
    assert!(!outcomes.is_empty(), "a computed verdict needs a measurement");
    if outcomes.iter().all(|o| *o == Outcome::Holds) {
        Verdict::Reproduced
    } else if outcomes.iter().all(|o| *o == Outcome::Fails) {
        Verdict::NotReproduced
    } else {
        Verdict::Partly
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn margins_parse_relative_and_absolute_and_refuse_the_rest() {
        assert_eq!(Margin::parse("10 % (default)"), Ok(Margin::Relative(0.1)));
        assert_eq!(Margin::parse("5%"), Ok(Margin::Relative(0.05)));
        assert_eq!(Margin::parse("0.5 (the seed's \"close to\")"), Ok(Margin::Absolute(0.5)));
        assert!(Margin::parse("about ten").is_err());
        assert!(Margin::parse("").is_err());
    }

    #[test]
    fn a_value_holds_within_its_margin_and_fails_just_outside() {
        let ten = Margin::Relative(0.1);
        assert_eq!(judge_value(97.0, 97.80, ten), Outcome::Holds);
        assert_eq!(judge_value(97.0, 87.3, ten), Outcome::Holds, "exactly at the margin holds");
        assert_eq!(judge_value(97.0, 87.29, ten), Outcome::Fails);
        assert_eq!(judge_value(97.0, 106.71, ten), Outcome::Fails);
        assert_eq!(judge_value(8.0, 5.45, ten), Outcome::Fails);
        assert_eq!(judge_value(4.0, 3.80, Margin::Absolute(0.25)), Outcome::Holds);
        assert_eq!(judge_value(4.0, 3.74, Margin::Absolute(0.25)), Outcome::Fails);
    }

    #[test]
    fn an_ordering_holds_by_its_margin_half_holds_under_it_and_fails_reversed_or_tied() {
        let ten = Margin::Relative(0.1);
        assert_eq!(judge_ordering(64.95, 50.88, ten), Outcome::Holds);
        assert_eq!(judge_ordering(42.65, 41.35, ten), Outcome::UnderMargin);
        assert_eq!(judge_ordering(64.62, 64.95, ten), Outcome::Fails);
        assert_eq!(judge_ordering(97.80, 97.80, ten), Outcome::Fails, "a tie is no ordering");
        assert_eq!(judge_ordering(2.0, 1.0, Margin::Absolute(1.0)), Outcome::Holds);
        assert_eq!(judge_ordering(1.9, 1.0, Margin::Absolute(1.0)), Outcome::UnderMargin);
    }

    #[test]
    fn verdicts_combine_all_some_and_none() {
        use Outcome::*;
        assert_eq!(combine(&[Holds, Holds]), Verdict::Reproduced);
        assert_eq!(combine(&[Fails, Fails]), Verdict::NotReproduced);
        assert_eq!(combine(&[Holds, Fails]), Verdict::Partly);
        assert_eq!(combine(&[UnderMargin]), Verdict::Partly);
        assert_eq!(combine(&[UnderMargin, Fails]), Verdict::Partly);
    }

    #[test]
    fn declared_verdicts_are_only_the_three_that_need_a_note() {
        assert_eq!(Verdict::declared("by construction"), Some(Verdict::ByConstruction));
        assert_eq!(Verdict::declared("calibrated to this cell"), Some(Verdict::Calibrated));
        assert_eq!(Verdict::declared("not addressed"), Some(Verdict::NotAddressed));
        assert_eq!(Verdict::declared("reproduced"), None);
    }
}
