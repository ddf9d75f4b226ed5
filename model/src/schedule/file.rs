//! The task graph file (TOML; format in model/README.md): tasks with a τ table, a work and a
//! speed-up model, or a time (atomic), or a nested graph; edges with bytes; nested graphs.
//! Every refusal is one line naming the file, the line and the task.

use std::collections::HashMap;
use std::path::Path;

use serde::Deserialize;
use toml::Spanned;

use super::graph::{Edge, Family, Graph, Task, Work};
use super::tau::Speedup;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FileSpec {
    #[serde(default)]
    task: Vec<TaskSpec>,
    #[serde(default)]
    edge: Vec<EdgeSpec>,
    #[serde(default)]
    graph: Vec<GraphSpec>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct GraphSpec {
    name: Spanned<String>,
    #[serde(default)]
    task: Vec<TaskSpec>,
    #[serde(default)]
    edge: Vec<EdgeSpec>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct TaskSpec {
    name: Spanned<String>,
    tau: Option<Vec<f64>>,
    work: Option<f64>,
    speedup: Option<String>,
    max_procs: Option<usize>,
    time: Option<f64>,
    graph: Option<Spanned<String>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct EdgeSpec {
    from: Spanned<String>,
    to: Spanned<String>,
    #[serde(default)]
    bytes: f64,
}

/// The largest `max_procs` of a work-and-speed-up task (its table's length).
pub const MAX_PROCS: usize = 4096;

/// Reads a task graph file.
///
/// # Errors
/// One line, `FILE:LINE: what`, naming the task or field.
pub fn load(path: &Path) -> Result<Family, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: cannot be read ({e})", path.display()))?;
    parse(&text, &path.display().to_string())
}

/// Parses the text of a task graph file named `name` in errors.
///
/// # Errors
/// As [`load`].
pub fn parse(text: &str, name: &str) -> Result<Family, String> {
    let line = |at: usize| 1 + text[..at.min(text.len())].matches('\n').count();
    let fail = |at: usize, why: String| format!("{name}:{}: {why}", line(at));
    let spec: FileSpec = toml::from_str(text).map_err(|e| {
        let at = e.span().map_or(0, |s| s.start);
        fail(at, e.message().split_whitespace().collect::<Vec<_>>().join(" "))
    })?;
    // The root is graph 0, the nested graphs follow in file order.
    let mut ids: HashMap<String, usize> = HashMap::new();
    for (i, g) in spec.graph.iter().enumerate() {
        if ids.insert(g.name.get_ref().clone(), i + 1).is_some() {
            return Err(fail(g.name.span().start, format!("a second graph named {:?}", g.name.get_ref())));
        }
    }
    let mut graphs = vec![build("main", &spec.task, &spec.edge, &ids, &fail)?];
    for g in &spec.graph {
        graphs.push(build(g.name.get_ref(), &g.task, &g.edge, &ids, &fail)?);
    }
    if graphs[0].tasks.is_empty() {
        return Err(format!("{name}: no [[task]]: the graph to schedule has no tasks"));
    }
    Family::new(graphs, 0).map_err(|e| format!("{name}: {e}"))
}

fn build(
    graph: &str,
    tasks: &[TaskSpec],
    edges: &[EdgeSpec],
    ids: &HashMap<String, usize>,
    fail: &dyn Fn(usize, String) -> String,
) -> Result<Graph, String> {
    let mut g = Graph { name: graph.to_string(), ..Graph::default() };
    let mut index: HashMap<&str, usize> = HashMap::new();
    for t in tasks {
        let at = t.name.span().start;
        let name = t.name.get_ref();
        if index.insert(name, g.tasks.len()).is_some() {
            return Err(fail(at, format!("graph {graph:?}: a second task named {name:?}")));
        }
        let bad = |why: String| fail(at, format!("task {name:?}: {why}"));
        let positive = |what: &str, x: f64| {
            if x.is_finite() && x > 0.0 {
                Ok(x)
            } else {
                Err(bad(format!("{what} = {x} must be above 0 and finite")))
            }
        };
        let given = [t.tau.is_some(), t.work.is_some(), t.time.is_some(), t.graph.is_some()];
        if given.iter().filter(|&&x| x).count() != 1 {
            return Err(bad("give exactly one of tau, work (with speedup), time or graph".into()));
        }
        if t.work.is_none() && (t.speedup.is_some() || t.max_procs.is_some()) {
            return Err(bad("speedup and max_procs go with work".into()));
        }
        let work = if let Some(tau) = &t.tau {
            if tau.is_empty() {
                return Err(bad("tau is empty".into()));
            }
            for (i, &x) in tau.iter().enumerate() {
                positive(&format!("τ({})", i + 1), x)?;
            }
            Work::Table(tau.clone())
        } else if let Some(w) = t.work {
            let w = positive("work (τ(1))", w)?;
            let speedup = Speedup::parse(t.speedup.as_deref().unwrap_or("linear")).map_err(bad)?;
            let max = t.max_procs.unwrap_or(MAX_PROCS);
            if !(1..=MAX_PROCS).contains(&max) {
                return Err(bad(format!("max_procs = {max} must be in 1..={MAX_PROCS}")));
            }
            Work::Table(speedup.table(w, max))
        } else if let Some(x) = t.time {
            Work::Atomic(positive("time", x)?)
        } else {
            let inner = t.graph.as_ref().expect("one of the four");
            let id = ids.get(inner.get_ref()).ok_or_else(|| {
                fail(inner.span().start, format!("task {name:?}: no [[graph]] named {:?}", inner.get_ref()))
            })?;
            Work::Graph(*id)
        };
        g.tasks.push(Task { name: name.clone(), work });
    }
    for e in edges {
        let end = |s: &Spanned<String>| {
            index.get(s.get_ref().as_str()).copied().ok_or_else(|| {
                fail(
                    s.span().start,
                    format!("graph {graph:?}: an edge names task {:?}, which is not defined", s.get_ref()),
                )
            })
        };
        let (from, to) = (end(&e.from)?, end(&e.to)?);
        if !(e.bytes.is_finite() && e.bytes >= 0.0) {
            return Err(fail(
                e.from.span().start,
                format!("edge {:?} -> {:?}: bytes = {} must be 0 or more", e.from.get_ref(), e.to.get_ref(), e.bytes),
            ));
        }
        g.edges.push(Edge { from, to, bytes: e.bytes });
    }
    if let Err(v) = g.topological_order() {
        let at = tasks[v].name.span().start;
        return Err(fail(at, format!("graph {graph:?} has a cycle through task {:?}", g.tasks[v].name)));
    }
    Ok(g)
}
