//! placeholder
use std::path::Path;

use super::SeedFigures;
use crate::LabError;

pub(super) fn draw(_results: &Path) -> Result<SeedFigures, LabError> {
    Ok(SeedFigures { seed: 2, figures: Vec::new(), not_drawn: Vec::new() })
}
