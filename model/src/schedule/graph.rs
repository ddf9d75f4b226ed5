//! Malleable task graphs (the scheduling paper §3.2): tasks that are atomic, given by a τ
//! table, or themselves a malleable task graph of the same family; edges carrying bytes;
//! heights and the layers they define.

use std::collections::BTreeSet;

/// The index of a graph in its [`Family`].
pub type GraphId = usize;

/// What a task costs.
#[derive(Clone, Debug, PartialEq)]
pub enum Work {
    /// An atomic task: one processor for this many seconds, whatever it is given.
    Atomic(f64),
    /// A malleable task by its times τ(1), τ(2), … in seconds; beyond the table's end the
    /// last value (the extra processors idle).
    Table(Vec<f64>),
    /// A malleable task that is a malleable task graph of the family, scheduled on each
    /// processor count to give its τ table.
    Graph(GraphId),
}

/// A task of a graph.
#[derive(Clone, Debug, PartialEq)]
pub struct Task {
    /// Its name, unique in its graph.
    pub name: String,
    /// Its cost.
    pub work: Work,
}

/// A data dependence: `to` reads what `from` wrote.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Edge {
    /// The writing task (index in the graph).
    pub from: usize,
    /// The reading task.
    pub to: usize,
    /// Bytes moved.
    pub bytes: f64,
}

/// A malleable task graph.
#[derive(Clone, Debug, PartialEq, Default)]
pub struct Graph {
    /// Its name (in errors and tables).
    pub name: String,
    /// The tasks.
    pub tasks: Vec<Task>,
    /// The edges.
    pub edges: Vec<Edge>,
}

/// A graph and the graphs nested in it: `graphs[root]` is scheduled, the others are the
/// insides of its (transitively) nested tasks. Built by [`Family::new`], which checks it.
#[derive(Clone, Debug, PartialEq)]
pub struct Family {
    graphs: Vec<Graph>,
    root: GraphId,
}

/// Why a graph cannot be scheduled: one line naming the graph and the task.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{0}")]
pub struct GraphError(pub String);

impl Graph {
    /// The predecessors of each task.
    pub fn preds(&self) -> Vec<Vec<usize>> {
        let mut preds = vec![Vec::new(); self.tasks.len()];
        for e in &self.edges {
            preds[e.to].push(e.from);
        }
        preds
    }

    /// The successors of each task.
    pub fn succs(&self) -> Vec<Vec<usize>> {
        let mut succs = vec![Vec::new(); self.tasks.len()];
        for e in &self.edges {
            succs[e.from].push(e.to);
        }
        succs
    }

    /// A topological order, or `Err(task)` with a task on a cycle.
    pub fn topological_order(&self) -> Result<Vec<usize>, usize> {
        let succs = self.succs();
        let mut indegree = vec![0usize; self.tasks.len()];
        for e in &self.edges {
            indegree[e.to] += 1;
        }
        let mut ready: Vec<usize> = (0..self.tasks.len()).filter(|&v| indegree[v] == 0).rev().collect();
        let mut order = Vec::with_capacity(self.tasks.len());
        while let Some(v) = ready.pop() {
            order.push(v);
            for &w in &succs[v] {
                indegree[w] -= 1;
                if indegree[w] == 0 {
                    ready.push(w);
                }
            }
        }
        if order.len() == self.tasks.len() {
            return Ok(order);
        }
        // A task left with predecessors lies on a cycle or after one: walk back along
        // unfinished predecessors until a task repeats, which is on a cycle.
        let preds = self.preds();
        let mut v = (0..self.tasks.len()).find(|&v| indegree[v] > 0).expect("a task is left");
        let mut seen = vec![false; self.tasks.len()];
        while !seen[v] {
            seen[v] = true;
            v = *preds[v].iter().find(|&&u| indegree[u] > 0).expect("an unfinished predecessor");
        }
        Err(v)
    }

    /// The height of each task: the number of edges on the longest path from a task without
    /// predecessors (the paper's h(v)). The graph must be acyclic.
    pub fn heights(&self) -> Vec<usize> {
        let order = self.topological_order().expect("an acyclic graph");
        let preds = self.preds();
        let mut h = vec![0usize; self.tasks.len()];
        for v in order {
            h[v] = preds[v].iter().map(|&u| h[u] + 1).max().unwrap_or(0);
        }
        h
    }

    /// The layers Λ_0, …, Λ_m: the tasks of each height, in index order. A layer's tasks
    /// are independent (an edge always raises the height).
    pub fn layers(&self) -> Vec<Vec<usize>> {
        let h = self.heights();
        let mut layers = vec![Vec::new(); h.iter().max().map_or(0, |m| m + 1)];
        for (v, &hv) in h.iter().enumerate() {
            layers[hv].push(v);
        }
        layers
    }

    /// The index of the task named `name`.
    pub fn task(&self, name: &str) -> Option<usize> {
        self.tasks.iter().position(|t| t.name == name)
    }

    /// This graph without the tasks named in `dropped` and every task that depends on one
    /// of them, transitively (the paper's removal of an application, §3.2).
    pub fn without(&self, dropped: &BTreeSet<String>) -> Graph {
        let order = self.topological_order().expect("an acyclic graph");
        let preds = self.preds();
        let mut gone = vec![false; self.tasks.len()];
        for v in order {
            gone[v] = dropped.contains(&self.tasks[v].name) || preds[v].iter().any(|&u| gone[u]);
        }
        let mut index = vec![usize::MAX; self.tasks.len()];
        let mut tasks = Vec::new();
        for (v, t) in self.tasks.iter().enumerate().filter(|(v, _)| !gone[*v]) {
            index[v] = tasks.len();
            tasks.push(t.clone());
        }
        let edges = self
            .edges
            .iter()
            .filter(|e| !gone[e.from] && !gone[e.to])
            .map(|e| Edge { from: index[e.from], to: index[e.to], bytes: e.bytes })
            .collect();
        Graph { name: self.name.clone(), tasks, edges }
    }
}

impl Family {
    /// Checks `graphs` (every graph acyclic, every time positive and finite, nested graphs
    /// in range and not containing themselves) and makes a family rooted at `root`.
    ///
    /// # Errors
    /// A [`GraphError`] naming the graph and the task.
    pub fn new(graphs: Vec<Graph>, root: GraphId) -> Result<Family, GraphError> {
        if root >= graphs.len() {
            return Err(GraphError(format!("no graph {root} (the family has {})", graphs.len())));
        }
        for g in &graphs {
            check_graph(g, graphs.len())?;
        }
        let family = Family { graphs, root };
        // A graph nested in itself would be scheduled forever.
        for g in 0..family.graphs.len() {
            let mut on_path = vec![false; family.graphs.len()];
            family.check_nesting(g, &mut on_path)?;
        }
        Ok(family)
    }

    fn check_nesting(&self, g: GraphId, on_path: &mut [bool]) -> Result<(), GraphError> {
        if on_path[g] {
            return Err(GraphError(format!("graph {:?} contains itself", self.graphs[g].name)));
        }
        on_path[g] = true;
        for t in &self.graphs[g].tasks {
            if let Work::Graph(inner) = t.work {
                self.check_nesting(inner, on_path)?;
            }
        }
        on_path[g] = false;
        Ok(())
    }

    /// The root graph.
    pub fn root(&self) -> &Graph {
        &self.graphs[self.root]
    }

    /// The root's id.
    pub fn root_id(&self) -> GraphId {
        self.root
    }

    /// Graph `g`.
    pub fn graph(&self, g: GraphId) -> &Graph {
        &self.graphs[g]
    }

    /// The family with its root replaced by `root` (same nested graphs, so a scheduler's
    /// memo of their τ tables stays valid).
    ///
    /// # Errors
    /// As [`Family::new`], for the new root.
    pub fn with_root(&self, root: Graph) -> Result<Family, GraphError> {
        check_graph(&root, self.graphs.len())?;
        let mut graphs = self.graphs.clone();
        graphs[self.root] = root;
        Ok(Family { graphs, root: self.root })
    }

    /// The hierarchy level of graph `g` (the paper §3.3): 0 if all its tasks are atomic,
    /// else one more than the largest level of its malleable tasks (a τ table is a malleable
    /// task of level 0).
    pub fn level(&self, g: GraphId) -> usize {
        let tasks = &self.graphs[g].tasks;
        if tasks.iter().all(|t| matches!(t.work, Work::Atomic(_))) {
            return 0;
        }
        1 + tasks.iter().map(|t| if let Work::Graph(inner) = t.work { self.level(inner) } else { 0 }).max().unwrap_or(0)
    }
}

/// One graph's checks (acyclic, times, nested ids).
fn check_graph(g: &Graph, graphs: usize) -> Result<(), GraphError> {
    let n = g.tasks.len();
    let bad = |t: &Task, why: String| GraphError(format!("graph {:?}, task {:?}: {why}", g.name, t.name));
    for t in &g.tasks {
        match &t.work {
            Work::Atomic(x) if !(x.is_finite() && *x > 0.0) => {
                return Err(bad(t, format!("time {x} must be above 0 and finite")))
            }
            Work::Table(tau) if tau.is_empty() => return Err(bad(t, "an empty τ table".into())),
            Work::Table(tau) => {
                if let Some((i, x)) = tau.iter().enumerate().find(|(_, x)| !(x.is_finite() && **x > 0.0)) {
                    return Err(bad(t, format!("τ({}) = {x} must be above 0 and finite", i + 1)));
                }
            }
            Work::Graph(inner) if *inner >= graphs => return Err(bad(t, format!("no nested graph {inner}"))),
            _ => {}
        }
    }
    if let Some(e) = g.edges.iter().find(|e| e.from >= n || e.to >= n) {
        return Err(GraphError(format!(
            "graph {:?}: an edge {} -> {} names a task it does not have",
            g.name, e.from, e.to
        )));
    }
    if let Some(e) = g.edges.iter().find(|e| !(e.bytes.is_finite() && e.bytes >= 0.0)) {
        let (a, b) = (&g.tasks[e.from].name, &g.tasks[e.to].name);
        return Err(GraphError(format!("graph {:?}: edge {a:?} -> {b:?} has {} bytes", g.name, e.bytes)));
    }
    if let Err(v) = g.topological_order() {
        return Err(GraphError(format!("graph {:?} has a cycle through task {:?}", g.name, g.tasks[v].name)));
    }
    Ok(())
}
