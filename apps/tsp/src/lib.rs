//! Travelling salesman branch and bound on DPS (thesis ch. 10): the options checked into a
//! plan ([`cli`]), the runner ([`run`]), the distributed search's graph and its two
//! strategies ([`graph`]), the kernels and the serial reference of `--verify` ([`kernel`]),
//! the record ([`record`]), TSPLIB files ([`tsplib`]), and the output files ([`outputs`],
//! [`plot`]).
//!
//! ```
//! use dps_tsp::kernel::{deadline::Deadline, dp, heuristic, instance::Instance, search};
//! let inst = Instance::random(10, 7);
//! let (upper, tour) = heuristic::initial_tour(&inst, 10, 1, Deadline::NONE);
//! let (length, _, _) = search::solve(&inst, upper, tour);
//! assert_eq!(length, dp::solve(&inst).unwrap().0);
//! ```

pub mod cli;
pub mod graph;
pub mod kernel;
pub mod outputs;
pub mod plot;
pub mod record;
pub mod run;
pub mod tsplib;
