//! What this rank knows of the job's structure: the thread collections, the cells of the DPS
//! threads it hosts, and the graphs, all indexed by the ids every rank assigns in the same
//! order (SPMD).

use std::collections::HashMap;
use std::sync::{Arc, RwLock};

use super::thread::ThreadBody;
use super::{ThreadAddr, ThreadCell};
use crate::collection::CollInfo;
use crate::graph::GraphImpl;
use crate::node::AnyState;

/// Collections, cells and graphs, each added once and then only read (hence `RwLock`s).
#[derive(Default)]
pub(crate) struct Registry {
    colls: RwLock<Vec<Arc<CollInfo>>>,
    cells: RwLock<HashMap<ThreadAddr, Arc<ThreadCell>>>,
    graphs: RwLock<Vec<Arc<GraphImpl>>>,
}

impl Registry {
    /// Registers a collection, creating the cells of the threads `rank` hosts (`init(i)`
    /// makes the state of thread `i`).
    pub(crate) fn add_collection(
        &self,
        rank: usize,
        info: Arc<CollInfo>,
        mut init: impl FnMut(usize) -> Box<AnyState>,
    ) {
        let mut cells = self.cells.write().unwrap();
        for (index, &host) in info.ranks.iter().enumerate() {
            if host == rank {
                let addr = ThreadAddr { coll: info.id as u32, index: index as u32 };
                let name = format!("{}[{index}]", info.name);
                cells.insert(addr, Arc::new(ThreadCell::new(ThreadBody::new(addr, name, init(index)))));
            }
        }
        self.colls.write().unwrap().push(info);
    }

    /// Number of DPS threads this rank hosts.
    pub(crate) fn local_threads(&self) -> usize {
        self.cells.read().unwrap().len()
    }

    pub(crate) fn collections(&self) -> usize {
        self.colls.read().unwrap().len()
    }

    /// The cell of thread `addr`, if this rank hosts it.
    pub(super) fn cell(&self, addr: ThreadAddr) -> Option<Arc<ThreadCell>> {
        self.cells.read().unwrap().get(&addr).cloned()
    }

    /// The rank that hosts thread `addr`, as far as this rank knows (see `migration`).
    pub(crate) fn rank_of(&self, addr: ThreadAddr) -> usize {
        self.colls.read().unwrap()[addr.coll as usize].rank_of(addr.index as usize)
    }

    /// Collection number `id`.
    pub(crate) fn collection(&self, id: u32) -> Arc<CollInfo> {
        self.colls.read().unwrap()[id as usize].clone()
    }

    /// The cell of thread `addr`, created with `make` if this rank never hosted it (a thread
    /// moving in for the first time).
    pub(super) fn cell_or_insert(&self, addr: ThreadAddr, make: impl FnOnce() -> ThreadBody) -> Arc<ThreadCell> {
        if let Some(cell) = self.cell(addr) {
            return cell;
        }
        self.cells.write().unwrap().entry(addr).or_insert_with(|| Arc::new(ThreadCell::new(make()))).clone()
    }

    pub(crate) fn add_graph(&self, g: Arc<GraphImpl>) {
        self.graphs.write().unwrap().push(g);
    }

    pub(crate) fn graph(&self, id: u32) -> Arc<GraphImpl> {
        self.graphs.read().unwrap()[id as usize].clone()
    }

    pub(crate) fn graph_count(&self) -> usize {
        self.graphs.read().unwrap().len()
    }
}
