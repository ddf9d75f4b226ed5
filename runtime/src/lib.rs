//! # Dynamic Parallel Schedules on MPI
//!
//! An application is a flow graph of operations built at run time: **leaf** (one token in,
//! one out), **split** (one in, many out), **merge** (many in, one out: the runtime counts
//! the split's tokens) and **stream** (a merge that posts outputs while inputs still
//! arrive). Operations run on the threads of **collections**, each thread with its own
//! state, mapped onto MPI ranks by a string such as `"0*2 1"`. A **route** picks, per token,
//! the thread of the next collection. Tokens move as soon as they are produced, so stages
//! pipeline and communication overlaps computation; a progress thread per rank owns every
//! MPI call. Splits have a flow-control window that bounds the tokens they create.
//!
//! ```
//! use dps::{route, Node, Runtime};
//! let rt = Runtime::single();
//! let main = rt.collection("main", "0", |_| ()).unwrap();
//! let upper = rt.collection("upper", "all*2", |_| ()).unwrap();
//! let split = Node::split("split", &main, route::fixed(0), |_: &mut (), s: String| {
//!     s.chars().enumerate().collect::<Vec<_>>()
//! });
//! let to_upper = Node::leaf("to_upper", &upper, route::round_robin(), |_: &mut (), (i, c): (usize, char)| {
//!     (i, c.to_ascii_uppercase())
//! });
//! let merge = Node::merge("merge", &main, dps::MergeFn::new(
//!     |_: &mut ()| Vec::new(),
//!     |_, acc: &mut Vec<(usize, char)>, t: (usize, char)| acc.push(t),
//!     |_, mut acc| { acc.sort(); acc.into_iter().map(|(_, c)| c).collect::<String>() },
//! ));
//! let graph = rt.graph("uppercase", split >> to_upper >> merge).unwrap();
//! assert_eq!(rt.call(&graph, "hello".to_string()).unwrap(), "HELLO");
//! rt.shutdown().unwrap();
//! ```
//!
//! A running application can export a graph as a **parallel service**
//! ([`Runtime::export`]); another, started separately, imports it ([`Runtime::import`]) and
//! calls it as a leaf of its own graphs ([`Service::leaf`]), with many calls in flight.
//!
//! See `runtime/examples/` for programs that run under `mpirun`.

#![warn(clippy::undocumented_unsafe_blocks)]

mod activity;
mod binding;
mod bulk_vec;
#[cfg(feature = "cli")]
mod cli;
mod collection;
mod collectives;
pub mod cpu_quota;
pub mod cpu_time;
mod engine;
mod error;
mod failure;
mod graph;
mod mapping;
mod mode;
mod node;
mod ops;
mod output_file;
mod pool;
pub mod route;
mod runtime;
mod service;
mod shared;
mod shm;
mod sim;
mod simclock;
mod simtime;
#[cfg(test)]
mod stress;
mod token;
mod trace;
mod transport;
mod wire;

pub use binding::Bind;
pub use bulk_vec::{BulkElem, BulkVec};
#[cfg(feature = "cli")]
pub use cli::RuntimeArgs;
pub use collection::Collection;
pub use error::{Error, ErrorKind};
pub use failure::last_words;
pub use graph::Graph;
pub use mode::{Pending, Stopwatch};
pub use node::{branch, Either, Node, Path, DEFAULT_WINDOW, MAX_WINDOW};
pub use ops::{join, Join, Merge, MergeFn, Posted, Stream};
pub use output_file::OutputFile;
pub use route::{Route, RouteCtx};
pub use runtime::Runtime;
pub use service::{Export, Service};
pub use shared::{shared_memory_huge_pages, Shared};
pub use sim::{LinkCost, SimOptions, SimReport, TransferCpu};
pub use simclock::{pause, simulated, skip_kernel, KernelCost, SimMode};
pub use token::{Bulk, MaybeBulk, Token};
