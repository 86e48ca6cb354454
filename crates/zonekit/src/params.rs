//! The `KEY=VALUE` flags every command reads the same way: `--param` (replay, serve, ocssd,
//! cache sim) and `--sampler-param` (cache run). The policies read the values.

use anyhow::Result;
use zonekit_base::policy::Params;

/// The `KEY=VALUE` items given with `flag`, as a map. Spaces around the key and around the
/// value are dropped (`" r1 = 0.5 "` is `r1=0.5`, as in a workload spec or a `--grid` axis);
/// the value is everything after the first `=`. Refused, naming `flag`: an item without `=` or
/// with nothing before it, and a key given twice (with both items: one of the two would be
/// ignored without a word).
pub fn parse_params(flag: &str, items: &[String]) -> Result<Params> {
    let mut params = Params::new();
    for item in items {
        let Some((key, value)) = item.split_once('=').filter(|(key, _)| !key.trim().is_empty()) else {
            usage!("{flag} {item:?}: expected KEY=VALUE");
        };
        let key = key.trim();
        if let Some(first) = params.insert(key.to_string(), value.trim().to_string()) {
            usage!("{flag} {key}: given twice ({key}={first} and {item})");
        }
    }
    Ok(params)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::Usage;

    fn parse(items: &[&str]) -> Result<Params> {
        parse_params("--param", &items.iter().map(|s| s.to_string()).collect::<Vec<_>>())
    }

    #[test]
    fn keys_and_values_are_trimmed_and_the_value_is_all_after_the_first_equals() {
        let p = parse(&[" r1 = 0.5 ", "spec=a=b", "empty="]).unwrap();
        assert_eq!(p.get("r1").map(String::as_str), Some("0.5"));
        assert_eq!(p.get("spec").map(String::as_str), Some("a=b"));
        assert_eq!(p.get("empty").map(String::as_str), Some(""), "an empty value is the policy's to judge");
        assert!(parse(&[]).unwrap().is_empty());
    }

    #[test]
    fn a_missing_key_or_equals_and_a_key_given_twice_are_refused_by_name() {
        for bad in ["r1", "=5", " =5", ""] {
            let e = parse(&[bad]).unwrap_err();
            assert!(e.is::<Usage>(), "{e}");
            assert_eq!(e.to_string(), format!("--param {bad:?}: expected KEY=VALUE"));
        }
        let e = parse(&["r1=2", " r1 =3"]).unwrap_err();
        assert!(e.is::<Usage>(), "{e}");
        assert_eq!(e.to_string(), "--param r1: given twice (r1=2 and  r1 =3)");
        let e = parse_params("--sampler-param", &["levels=3".into(), "levels=4".into()]).unwrap_err();
        assert_eq!(e.to_string(), "--sampler-param levels: given twice (levels=3 and levels=4)");
    }
}
