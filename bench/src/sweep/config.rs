//! The experiments file (`bench/experiments.toml`): what each experiment runs, over which
//! parameters and rank counts, and the published numbers to show beside the results.

use std::collections::BTreeMap;
use std::path::Path;

use anyhow::{bail, Context, Result};
use serde::Deserialize;

/// The whole file.
#[derive(Debug, Deserialize)]
pub(crate) struct Experiments {
    pub(crate) experiment: Vec<Experiment>,
}

/// One experiment: an app run over a grid of parameters and rank counts.
#[derive(Debug, Deserialize, Clone)]
#[serde(deny_unknown_fields)]
pub(crate) struct Experiment {
    /// Name used on the command line and for the results directory.
    pub(crate) name: String,
    /// Title of its table.
    pub(crate) title: String,
    /// Binary in target/release.
    pub(crate) app: String,
    /// Arguments of every run (`--json` is added).
    #[serde(default)]
    pub(crate) args: Vec<String>,
    /// Parameter axes: each value becomes `--key value` (a bare `value` for keys starting
    /// with `_`); runs cover every combination.
    #[serde(default)]
    pub(crate) params: BTreeMap<String, Vec<toml::Value>>,
    /// Rank counts.
    #[serde(default = "one_rank")]
    pub(crate) ranks: Vec<usize>,
    /// Runs per point; the median time is kept.
    #[serde(default = "three")]
    pub(crate) repeat: usize,
    /// `mpi` (mpirun or srun) or `none` (the app launches itself, like `dps-bench transport`).
    #[serde(default = "mpi")]
    pub(crate) launcher: String,
    /// Arguments replacing `args` for the serial reference, run once per parameter point.
    #[serde(default)]
    pub(crate) reference: Option<Vec<String>>,
    /// Parameters the reference does not take (it is the same for all their values).
    #[serde(default)]
    pub(crate) reference_ignores: Vec<String>,
    /// Result fields shown in the table besides the time.
    #[serde(default)]
    pub(crate) columns: Vec<String>,
    /// Published numbers: rows matched on parameters (and `ranks`), with their values.
    #[serde(default)]
    pub(crate) published: Vec<Published>,
    /// Where the published numbers come from (paper, hardware).
    #[serde(default)]
    pub(crate) source: String,
    /// Seconds before a run counts as hung.
    #[serde(default = "timeout")]
    pub(crate) timeout_s: u64,
}

/// A published row: the parameters it applies to and its values.
#[derive(Debug, Deserialize, Clone)]
pub(crate) struct Published {
    #[serde(rename = "match")]
    pub(crate) when: BTreeMap<String, toml::Value>,
    pub(crate) values: BTreeMap<String, toml::Value>,
}

fn one_rank() -> Vec<usize> {
    vec![1]
}
fn three() -> usize {
    3
}
fn mpi() -> String {
    "mpi".into()
}
fn timeout() -> u64 {
    600
}

impl Experiments {
    /// Reads and checks the file.
    ///
    /// # Errors
    /// If it cannot be read or parsed, or an experiment is inconsistent.
    pub(crate) fn load(path: &Path) -> Result<Self> {
        let text = std::fs::read_to_string(path).with_context(|| format!("cannot read {}", path.display()))?;
        let file: Experiments =
            toml::from_str(&text).with_context(|| format!("{} is not a valid experiments file", path.display()))?;
        for e in &file.experiment {
            if e.ranks.is_empty() || e.ranks.contains(&0) || e.repeat == 0 {
                bail!("experiment {}: ranks must be non-empty and positive, repeat at least 1", e.name);
            }
            if e.launcher != "mpi" && e.launcher != "none" {
                bail!("experiment {}: launcher must be \"mpi\" or \"none\", not {:?}", e.name, e.launcher);
            }
        }
        Ok(file)
    }

    /// The experiments named (all if `names` is empty).
    ///
    /// # Errors
    /// If a name is unknown (the message lists the known ones).
    pub(crate) fn select(&self, names: &[String]) -> Result<Vec<Experiment>> {
        if names.is_empty() {
            return Ok(self.experiment.clone());
        }
        names
            .iter()
            .map(|n| {
                self.experiment.iter().find(|e| &e.name == n).cloned().with_context(|| {
                    let known: Vec<&str> = self.experiment.iter().map(|e| e.name.as_str()).collect();
                    format!("no experiment named {n:?}; known: {}", known.join(", "))
                })
            })
            .collect()
    }
}

/// A point of the parameter grid, in axis order.
pub(crate) type Point = Vec<(String, toml::Value)>;

/// Every combination of the parameter axes.
pub(crate) fn grid(params: &BTreeMap<String, Vec<toml::Value>>) -> Vec<Point> {
    params.iter().fold(vec![Vec::new()], |points, (key, values)| {
        points
            .iter()
            .flat_map(|p| values.iter().map(move |v| [p.clone(), vec![(key.clone(), v.clone())]].concat()))
            .collect()
    })
}

/// True if the reference of point `a` is that of point `b`: they agree on every parameter
/// the reference takes.
pub(crate) fn same_reference(a: &Point, b: &Point, ignores: &[String]) -> bool {
    let keep = |p: &Point| p.iter().filter(|(k, _)| !ignores.contains(k)).cloned().collect::<Point>();
    keep(a) == keep(b)
}

/// A point as arguments: `--key value` each (`--key v1 v2` for an array value, as in
/// `--random 1024 1024`), or just the value for a key starting with `_` (a positional
/// argument, such as an input file).
pub(crate) fn command_line(point: &Point) -> Vec<String> {
    point
        .iter()
        .flat_map(|(k, v)| {
            let values: Vec<String> = match v {
                toml::Value::Array(items) => items.iter().map(arg).collect(),
                other => vec![arg(other)],
            };
            let flag = (!k.starts_with('_')).then(|| format!("--{k}"));
            flag.into_iter().chain(values)
        })
        .collect()
}

/// A TOML value as a command-line argument (an array as its items joined by `x`, in tables).
pub(crate) fn arg(v: &toml::Value) -> String {
    match v {
        toml::Value::String(s) => s.clone(),
        toml::Value::Array(items) => items.iter().map(arg).collect::<Vec<_>>().join("x"),
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grid_covers_every_combination() {
        let mut params = BTreeMap::new();
        params.insert("a".to_string(), vec![toml::Value::Integer(1), toml::Value::Integer(2)]);
        params.insert("b".to_string(), vec![toml::Value::String("x".into())]);
        let g = grid(&params);
        assert_eq!(g.len(), 2);
        assert_eq!(arg(&g[1][0].1), "2");
        assert_eq!(arg(&g[1][1].1), "x");
        assert_eq!(grid(&BTreeMap::new()), vec![Vec::new()]);
    }
}
