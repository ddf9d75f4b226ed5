//! The experiments file (`bench/experiments.toml`): what each experiment runs, over which
//! parameters and rank counts, its quick version, and the published numbers to show beside
//! the results.

use std::collections::BTreeMap;
use std::path::Path;

use anyhow::Result;
use dps_harness::BadInput;
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
    /// Where a run's time comes from.
    #[serde(default)]
    pub(crate) timing: Timing,
    /// Run on an emulated cluster of one node per rank (`slurm/cluster.sh`), not on this
    /// machine's cores.
    #[serde(default)]
    pub(crate) cluster: Option<Cluster>,
    /// What `--quick` changes (the main job's default: smaller sizes, fewer runs).
    #[serde(default)]
    pub(crate) quick: Option<Quick>,
}

/// An emulated cluster (`slurm/cluster.sh up`) of as many nodes as the experiment's largest
/// rank count: each rank on a node of its own, the serial reference on node n1.
#[derive(Debug, Deserialize, Clone, PartialEq)]
#[serde(deny_unknown_fields)]
pub(crate) struct Cluster {
    /// Each node's share of a CPU core.
    pub(crate) cpu: f64,
    /// Each node's link rate into the bridge (`100mbit`, `1gbit`) or `none` (unshaped).
    pub(crate) link: String,
    /// A node of its own for the master, at this share: rank 0 alone on node n1, the
    /// experiment's `ranks` (the workers) on nodes n2.., the app's `--map` naming ranks
    /// 1..=P, and the serial reference on n2, a worker's node. The thesis's farms ran so: P
    /// slave PCs and a client PC (of two CPUs in Fig. 6.6).
    #[serde(default)]
    pub(crate) master: Option<f64>,
}

impl Cluster {
    /// What is wrong with the cluster's settings, if anything.
    fn check(&self) -> Result<(), String> {
        if !(self.cpu >= 0.01 && self.cpu <= 1.0) {
            return Err(format!("cluster: cpu {} must be a share of a core between 0.01 and 1", self.cpu));
        }
        if let Some(m) = self.master.filter(|m| !(*m >= 0.01 && *m <= 4.0)) {
            return Err(format!("cluster: master {m} must be a share of cores between 0.01 and 4"));
        }
        let rate = self.link.trim_end_matches("bit").trim_end_matches(['k', 'm', 'g']);
        let is_rate = self.link.ends_with("bit") && rate.parse::<f64>().is_ok_and(|r| r > 0.0);
        if self.link != "none" && !is_rate {
            return Err(format!("cluster: link {:?} must be a rate (100mbit, 1gbit) or \"none\"", self.link));
        }
        Ok(())
    }

    /// Why `nodes` such nodes (and the master's, if any) do not fit on `cores` cores, if
    /// they do not: their shares together may not exceed the machine's cores.
    pub(crate) fn too_big(&self, nodes: usize, cores: usize) -> Option<String> {
        let needed = self.cpu * nodes as f64 + self.master.unwrap_or(0.0);
        let master = self.master.map_or(String::new(), |m| format!(" and a master's at {m}"));
        let shown = (needed * 1e3).round() / 1e3;
        (needed > cores as f64 + 1e-9).then(|| {
            format!("{nodes} nodes at {} of a core{master} need {shown} cores; this machine has {cores}", self.cpu)
        })
    }

    /// The table's heading line for it.
    pub(crate) fn describe(&self) -> String {
        let link = if self.link == "none" { "unshaped links".to_string() } else { format!("{} links", self.link) };
        match self.master {
            Some(m) => format!(
                "Emulated cluster: the master (rank 0) alone on a node of {m} of a core, each of the P worker ranks on a node of {} of a core, {link}.",
                self.cpu
            ),
            None => format!("Emulated cluster: one rank per node, each node {} of a core, {link}.", self.cpu),
        }
    }

    /// The rank list of `--map` for P workers beside a master of their own (ranks 1..=P).
    pub(crate) fn worker_map(workers: usize) -> String {
        (1..=workers).map(|r| r.to_string()).collect::<Vec<_>>().join(" ")
    }
}

/// The fields of an experiment that its quick version may replace; each one given replaces
/// the experiment's, except `params`, whose axes replace the experiment's axes of the same
/// name (the other axes are kept).
#[derive(Debug, Deserialize, Clone, Default)]
#[serde(deny_unknown_fields)]
pub(crate) struct Quick {
    title: Option<String>,
    args: Option<Vec<String>>,
    reference: Option<Vec<String>>,
    #[serde(default)]
    params: BTreeMap<String, Vec<toml::Value>>,
    ranks: Option<Vec<usize>>,
    repeat: Option<usize>,
    cluster: Option<Cluster>,
}

/// Where a run's time comes from.
#[derive(Debug, Deserialize, Clone, Copy, Default, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub(crate) enum Timing {
    /// The record's `seconds`, which every app reports: a record without it is an error.
    #[default]
    Record,
    /// The launch's wall time, for records without `seconds` (`dps-bench transport` and
    /// `overlap` time each payload or block size, not the run).
    Wall,
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

/// The most runs per point an experiment (or `--repeat`) may ask for.
pub(crate) const MAX_REPEAT: usize = 1000;

/// The 1-based line of byte `offset` in `text`.
fn line_at(text: &str, offset: usize) -> usize {
    text.as_bytes()[..offset.min(text.len())].iter().filter(|&&b| b == b'\n').count() + 1
}

impl Experiments {
    /// Reads and checks the file.
    ///
    /// # Errors
    /// A [`BadInput`] naming the file (and the line, or the experiment): it cannot be read
    /// or parsed, or an experiment is inconsistent.
    pub(crate) fn load(path: &Path) -> Result<Self> {
        let name = path.display();
        let text = std::fs::read_to_string(path).map_err(|e| BadInput::new(format!("--file {name}: {e}")))?;
        let file: Experiments = toml::from_str(&text).map_err(|e| {
            let line = e.span().map_or(String::new(), |s| format!(":{}", line_at(&text, s.start)));
            // The message may span lines ("invalid array\nexpected `]`"): one line is printed.
            let message: Vec<&str> = e.message().lines().map(str::trim).filter(|l| !l.is_empty()).collect();
            BadInput::new(format!("{name}{line}: {}", message.join(": ")))
        })?;
        for (i, e) in file.experiment.iter().enumerate() {
            // Point at the experiment's name in the file (its line), for the error messages.
            let line = text.find(&format!("\"{}\"", e.name)).map_or(0, |at| line_at(&text, at));
            let refuse = |why: String| BadInput::new(format!("{name}:{line}: experiment {:?}: {why}", e.name));
            if let Err(why) = e.check() {
                return Err(refuse(why).into());
            }
            if let Some(quick) = &e.quick {
                if let Some(axis) = quick.params.keys().find(|k| !e.params.contains_key(*k)) {
                    return Err(refuse(format!("quick: params: {axis:?} is not an axis of the experiment")).into());
                }
                if let Err(why) = e.clone().quick().check() {
                    return Err(refuse(format!("quick: {why}")).into());
                }
            }
            if file.experiment[..i].iter().any(|o| o.name == e.name) {
                return Err(refuse("the name is used twice".into()).into());
            }
        }
        Ok(file)
    }

    /// The experiments named (all if `names` is empty).
    ///
    /// # Errors
    /// A [`BadInput`] if a name is unknown (the message lists the known ones).
    pub(crate) fn select(&self, names: &[String]) -> Result<Vec<Experiment>> {
        if names.is_empty() {
            return Ok(self.experiment.clone());
        }
        names
            .iter()
            .map(|n| {
                let found = self.experiment.iter().find(|e| &e.name == n).cloned();
                found.ok_or_else(|| {
                    let known: Vec<&str> = self.experiment.iter().map(|e| e.name.as_str()).collect();
                    BadInput::new(format!("no experiment named {n:?}; known: {}", known.join(", "))).into()
                })
            })
            .collect()
    }
}

impl Experiment {
    /// The quick version: the `quick` table's fields in place of the experiment's (the
    /// experiment itself if it has none).
    pub(crate) fn quick(mut self) -> Experiment {
        let Some(q) = self.quick.take() else { return self };
        let mut params = self.params;
        params.extend(q.params);
        Experiment {
            title: q.title.unwrap_or(self.title),
            args: q.args.unwrap_or(self.args),
            reference: q.reference.or(self.reference),
            params,
            ranks: q.ranks.unwrap_or(self.ranks),
            repeat: q.repeat.unwrap_or(self.repeat),
            cluster: q.cluster.or(self.cluster),
            ..self
        }
    }

    /// What is inconsistent in the experiment, if anything.
    fn check(&self) -> Result<(), String> {
        let plain = |s: &str| !s.is_empty() && s != "." && s != ".." && !s.contains(['/', '\\']);
        if !plain(&self.name) {
            return Err("the name must be a plain file name (it names the results directory)".into());
        }
        if !plain(&self.app) {
            return Err(format!("app {:?} must be the name of a binary in target/release", self.app));
        }
        if self.ranks.is_empty() || self.ranks.contains(&0) {
            return Err("ranks must be non-empty and positive".into());
        }
        if !(1..=MAX_REPEAT).contains(&self.repeat) {
            return Err(format!("repeat {} must be between 1 and {MAX_REPEAT}", self.repeat));
        }
        if self.timeout_s == 0 {
            return Err("timeout_s must be at least 1 (0 would disable the timeout)".into());
        }
        if self.launcher != "mpi" && self.launcher != "none" {
            return Err(format!("launcher must be \"mpi\" or \"none\", not {:?}", self.launcher));
        }
        if let Some(cluster) = &self.cluster {
            cluster.check()?;
            if cluster.master.is_some() && (self.args.iter().any(|a| a == "--map") || self.params.contains_key("map")) {
                return Err(
                    "cluster: with a master node the sweep maps the workers (--map 1..=P); args must not".into()
                );
            }
        }
        Ok(())
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
    fn a_cluster_fits_when_its_shares_add_up_to_the_cores_at_most() {
        let c = Cluster { cpu: 0.25, link: "100mbit".into(), master: None };
        assert_eq!(c.too_big(8, 2), None);
        assert_eq!(c.too_big(9, 2).unwrap(), "9 nodes at 0.25 of a core need 2.25 cores; this machine has 2");
        assert!(c.check().is_ok() && Cluster { cpu: 1.0, link: "none".into(), master: None }.check().is_ok());
        assert!(Cluster { cpu: 1.5, link: "none".into(), master: None }.check().is_err());
        // The master's node counts too.
        let m = Cluster { cpu: 0.2, link: "none".into(), master: Some(0.4) };
        assert_eq!(m.too_big(8, 2), None);
        assert_eq!(
            m.too_big(9, 2).unwrap(),
            "9 nodes at 0.2 of a core and a master's at 0.4 need 2.2 cores; this machine has 2"
        );
        assert!(m.check().is_ok() && Cluster { master: Some(0.0), ..m }.check().is_err());
        assert_eq!(Cluster::worker_map(3), "1 2 3");
    }

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

    #[test]
    fn the_quick_version_replaces_the_fields_it_names_and_the_axes_it_names() {
        let text = "[[experiment]]\nname = \"a\"\ntitle = \"big\"\napp = \"dps-life\"\nargs = [\"--n\", \"4096\"]\n\
                    params = { depth = [1, 8], world = [1024, 4096] }\nranks = [1, 2]\n\
                    [experiment.quick]\ntitle = \"small\"\nparams = { world = [1024] }\nrepeat = 1\n";
        let e = load_text(text).unwrap().experiment.remove(0);
        assert_eq!((e.title.as_str(), e.repeat, e.params["world"].len()), ("big", 3, 2));
        let q = e.clone().quick();
        assert_eq!((q.title.as_str(), q.repeat, q.params["world"].len()), ("small", 1, 1));
        assert_eq!((q.args, q.ranks, q.params["depth"].len()), (e.args, e.ranks, 2), "the fields not named are kept");
        assert!(q.quick.is_none());
        let plain =
            load_text("[[experiment]]\nname = \"b\"\ntitle = \"t\"\napp = \"x\"\n").unwrap().experiment.remove(0);
        assert_eq!(plain.clone().quick().title, plain.title);
    }

    #[test]
    fn the_shipped_file_loads_and_its_input_files_exist() {
        let bench = Path::new(env!("CARGO_MANIFEST_DIR"));
        let file = Experiments::load(&bench.join("experiments.toml")).unwrap();
        for e in file.experiment.iter().flat_map(|e| [e.clone(), e.clone().quick()]) {
            // A positional parameter (`_instance`) names an input file, from the workspace root.
            for value in e.params.iter().filter(|(k, _)| k.starts_with('_')).flat_map(|(_, v)| v) {
                let path = bench.join("..").join(arg(value));
                assert!(path.is_file(), "experiment {}: {} is not a file", e.name, path.display());
            }
        }
    }

    fn load_text(text: &str) -> Result<Experiments> {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("x.toml");
        std::fs::write(&path, text).unwrap();
        Experiments::load(&path)
    }

    #[test]
    fn bad_files_name_the_file_the_line_and_the_experiment() {
        let e =
            load_text("[[experiment]]\nname = \"a\"\ntitle = \"t\"\napp = \"dps-matmul\"\nranks = [1,\n").unwrap_err();
        assert!(e.is::<BadInput>());
        assert!(e.to_string().contains("x.toml:6"), "{e}");
        let base = "[[experiment]]\nname = \"a\"\ntitle = \"t\"\napp = \"dps-matmul\"\n";
        let e = load_text(&format!("{base}repeat = 0\n")).unwrap_err();
        assert!(e.to_string().contains("x.toml:2: experiment \"a\": repeat 0"), "{e}");
        let e = load_text(&format!("{base}timeout_s = 0\n")).unwrap_err();
        assert!(e.to_string().contains("timeout_s"), "{e}");
        let e = load_text(&format!("{base}bogus = 1\n")).unwrap_err();
        assert!(e.to_string().contains("x.toml:5") && e.to_string().contains("bogus"), "{e}");
        let e = load_text(&format!("{base}{base}")).unwrap_err();
        assert!(e.to_string().contains("used twice"), "{e}");
        let e = load_text(&base.replace("\"a\"", "\"../a\"")).unwrap_err();
        assert!(e.to_string().contains("plain file name"), "{e}");
        let e = load_text(&format!("{base}quick = {{ repeat = 0 }}\n")).unwrap_err();
        assert!(e.to_string().contains("experiment \"a\": quick: repeat 0"), "{e}");
        let e = load_text(&format!("{base}quick = {{ params = {{ n = [1] }} }}\n")).unwrap_err();
        assert!(e.to_string().contains("quick: params: \"n\" is not an axis"), "{e}");
        let e = load_text(&format!("{base}quick = {{ name = \"b\" }}\n")).unwrap_err();
        assert!(e.to_string().contains("name"), "{e}");
        let e = load_text(&format!("{base}cluster = {{ cpu = 0, link = \"none\" }}\n")).unwrap_err();
        assert!(e.to_string().contains("cluster: cpu 0 must be a share of a core"), "{e}");
        let e = load_text(&format!("{base}cluster = {{ cpu = 0.5, link = \"fast\" }}\n")).unwrap_err();
        assert!(e.to_string().contains("cluster: link \"fast\" must be a rate"), "{e}");
        let e = load_text(&format!("{base}cluster = {{ cpu = 0.5 }}\n")).unwrap_err();
        assert!(e.to_string().contains("link"), "{e}");
        let master = "cluster = { cpu = 0.2, link = \"none\", master = 0.4 }\n";
        let e = load_text(&format!("{base}args = [\"--map\", \"0\"]\n{master}")).unwrap_err();
        assert!(e.to_string().contains("with a master node the sweep maps the workers"), "{e}");
        let e = load_text(&format!("{base}{}", master.replace("0.4", "9"))).unwrap_err();
        assert!(e.to_string().contains("cluster: master 9 must be a share of cores"), "{e}");
        assert!(load_text(&format!("{base}{master}")).is_ok());
        let file = load_text(base).unwrap();
        let e = file.select(&["nope".to_string()]).unwrap_err();
        assert!(e.is::<BadInput>() && e.to_string().contains("no experiment named \"nope\"; known: a"), "{e}");
    }
}
