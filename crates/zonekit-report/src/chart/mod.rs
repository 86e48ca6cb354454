//! SVG charts for research figures, written by hand rather than with `plotters`.
//!
//! Kinds: [`BarChart`] (grouped or stacked bars over categories, one colour per series, a
//! legend), [`LineChart`] (several series with markers, linear or log axes), [`box_chart`] and
//! [`heat_map`]; [`bar_chart`] and [`line_chart`] are the one-call forms the experiments use.
//! Every value axis ticks at round 1-2-5 steps inside its data, an axis of whole numbers is
//! labelled in whole numbers, and [`Width`] sizes the text for a paper's column or a report page.
//!
//! # Why not `plotters`
//! `plotters` 0.3.7 with `default-features = false, features = ["svg_backend"]` builds here
//! offline (plotters, plotters-backend, plotters-svg and num-traits; 9 s), and its ticks are
//! round. Measured on the interfaces figure (7 placements × 3 interfaces, page width) it
//! does not do what this module is for:
//! - it has no grouped or stacked bars: each bar's offset in its group is computed by hand, as
//!   here, and it draws 27 rectangles and a mesh for 21 bars;
//! - without its font features (`ttf` needs font-kit and the system's fonts through C
//!   libraries, `ab_glyph` a font file loaded at run time) it guesses text widths as we do, and
//!   the 15-px title asked for came out at 12.1 px;
//! - its SVG for that chart is 13,801 bytes, ours 4,269 bytes (its
//!   attributes repeated on every element, ours inherited from the root);
//! - the heat map's and the report's tests read this module's SVG (cells, `<title>`s), which a
//!   move would have rewritten for no gain in the picture.
//!
//! The output stays self-contained SVG: no scripts, no external fonts or stylesheets, a
//! `viewBox` so it scales, and `<title>` tooltips with each bar's exact value.

mod axis;
mod bars;
mod heat;
mod line;
mod panels;
mod svg;

pub use bars::{bar_chart, box_chart, grouped_box_chart, BarChart};
pub use heat::heat_map;
pub use line::{line_chart, LineChart, Series};
pub use panels::panels;
pub use svg::Width;

/// Checks that `svg` is well-formed XML with one `<svg>` root: every tag closed in order,
/// attributes quoted, `&` only in an entity. (No XML crate is in the dependency tree.)
#[cfg(test)]
pub(crate) fn well_formed(svg: &str) -> Result<(), String> {
    let mut open: Vec<&str> = Vec::new();
    let mut roots = 0;
    let mut rest = svg.trim();
    while !rest.is_empty() {
        let Some(at) = rest.find('<') else {
            check_text(rest)?;
            break;
        };
        check_text(&rest[..at])?;
        if open.is_empty() && !rest[..at].trim().is_empty() {
            return Err(format!("text outside the root: {:?}", &rest[..at]));
        }
        rest = &rest[at..];
        let end = rest.find('>').ok_or("a tag is not closed")?;
        let tag = &rest[1..end];
        rest = &rest[end + 1..];
        if let Some(name) = tag.strip_prefix('/') {
            match open.pop() {
                Some(top) if top == name.trim() => {}
                other => return Err(format!("</{name}> closes {other:?}")),
            }
            continue;
        }
        let self_closing = tag.ends_with('/');
        let tag = tag.trim_end_matches('/');
        let name = tag.split_whitespace().next().ok_or("an empty tag")?;
        if !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '-' || c == ':') {
            return Err(format!("bad tag name {name:?}"));
        }
        // Attributes: name="value", values without '<' or a bare '&'.
        let mut attributes = tag[name.len()..].trim();
        while !attributes.is_empty() {
            let (key, value) = attributes.split_once("=\"").ok_or_else(|| format!("unquoted attribute in <{tag}>"))?;
            if key.trim().is_empty() || key.trim().contains(char::is_whitespace) {
                return Err(format!("bad attribute {key:?} in <{tag}>"));
            }
            let (value, after) = value.split_once('"').ok_or_else(|| format!("unterminated attribute in <{tag}>"))?;
            check_text(value)?;
            attributes = after.trim_start();
        }
        if open.is_empty() {
            roots += 1;
            if name != "svg" || roots > 1 {
                return Err(format!("root element <{name}>"));
            }
        }
        if !self_closing {
            open.push(name);
        }
    }
    if let Some(name) = open.last() {
        return Err(format!("<{name}> is never closed"));
    }
    if roots != 1 {
        return Err("no <svg> root".into());
    }
    Ok(())
}

#[cfg(test)]
fn check_text(text: &str) -> Result<(), String> {
    for (at, _) in text.match_indices('&') {
        let entity = text[at..].split(';').next().unwrap_or_default();
        let known = ["&amp", "&lt", "&gt", "&quot", "&apos"].contains(&entity) || entity.strip_prefix("&#").is_some_and(|d| !d.is_empty() && d.chars().all(|c| c.is_ascii_digit()));
        if !known || !text[at..].contains(';') {
            return Err(format!("bare & in {text:?}"));
        }
    }
    if text.contains('>') {
        return Err(format!("stray > in {text:?}"));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_checker_refuses_what_is_not_well_formed() {
        assert!(well_formed(r#"<svg a="1"><g><text>a &amp; b</text></g><rect/></svg>"#).is_ok());
        for bad in ["<svg><g></svg>", "<svg>a & b</svg>", "<svg a=1></svg>", "<svg></svg><svg></svg>", "<g></g>", "<svg><text></g></svg>", "<svg"] {
            assert!(well_formed(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn every_chart_is_well_formed() {
        let series = [Series { name: "a&b".into(), points: vec![(1.0, 2.0), (3.0, 4.0)] }, Series { name: "<c>".into(), points: vec![] }];
        for svg in [
            bar_chart("t", "y", &[("a\"b".into(), 1.0)]),
            bar_chart("t", "y", &[]),
            box_chart("t", "y", 1.0, &[("a".into(), [0.0, 0.2, 0.5, 0.7, 1.0])]),
            line_chart("t", "x", "y", &series, false),
            line_chart("t", "x", "y", &series, true),
            LineChart::new("t", "x", "s", "y", "").y_log().series(series[0].clone()).width(Width::Column).svg(),
            BarChart::new("t", "y", "ms", "x", vec!["a".into()]).series("p", vec![-1.0]).series("q", vec![2.0]).svg(),
            heat_map("t", "x", "y", &[vec![1.0, 2.0]]),
        ] {
            well_formed(&svg).unwrap_or_else(|e| panic!("{e}: {svg}"));
        }
    }
}
