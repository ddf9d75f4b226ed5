//! Travelling salesman branch and bound on DPS (thesis ch. 10).
//!
//! The kernel (plain functions on plain data): [`tsplib`] and [`distance`] read instances,
//! [`heuristic`] finds a first tour, [`bound`] computes Held-Karp 1-tree bounds, [`search`]
//! is the serial depth-first branch and bound with a node budget, [`thesis`] the thesis's
//! own search, [`dp`] the exact dynamic program. The graph: [`graph`] wires a master and
//! slaves with DPS, [`variants`] plugs the two searches into it. The CLI: [`cli`], [`tour_io`]
//! and [`plot`].
//!
//! ```
//! use dps_tsp::{deadline::Deadline, dp, heuristic, search, tsplib::Instance};
//! let inst = Instance::random(10, 7);
//! let (upper, tour) = heuristic::initial_tour(&inst, 10, 1, Deadline::NONE);
//! let (length, _, _) = search::solve(&inst, upper, tour);
//! assert_eq!(length, dp::solve(&inst).unwrap().0);
//! ```

pub mod bound;
pub mod cli;
pub mod deadline;
pub mod distance;
pub mod dp;
pub mod graph;
pub mod heuristic;
pub mod plot;
pub mod record;
pub mod search;
pub mod thesis;
pub mod tour_io;
pub mod tsplib;
pub mod variants;

pub use dps_harness::BadInput;
