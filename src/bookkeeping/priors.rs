//! Column priors as the checkpoint keeps them: the JSON a job's first rows were summed into
//! (see `engine::priors`, which forms them), read back by the run and by `review`.

use crate::detect::{ColumnPrior, Label};
use std::collections::BTreeMap;

/// Parses the priors saved in the checkpoint.
pub fn parse(json: &str) -> BTreeMap<String, ColumnPrior> {
    let raw: BTreeMap<String, Vec<(String, f32)>> = serde_json::from_str(json).unwrap_or_default();
    raw.into_iter()
        .map(|(col, counts)| {
            let labeled: Vec<(Label, f32)> = counts
                .into_iter()
                .filter_map(|(l, c)| l.parse::<Label>().ok().map(|l| (l, c)))
                .collect();
            (col, ColumnPrior::from_counts(&labeled))
        })
        .collect()
}
