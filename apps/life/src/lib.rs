//! Conway's Game of Life on DPS (the DPS paper, §5): the options checked into a plan
//! ([`cli`]), the runner ([`run`]), the simulation graphs ([`graph`]: `simple`, Figure 7;
//! `overlap`, Figure 8; the world as a parallel service, Figure 10) and the service's clients
//! ([`view`], a rank of the same job; [`viewer`], `dps-life view`, a program started
//! separately), the bit-parallel kernel and its byte-per-cell reference ([`kernel`]), and the
//! world, its patterns, schedule, output, memory and record.

pub mod cli;
pub mod footprint;
pub mod graph;
pub mod kernel;
pub mod layout;
pub mod output;
pub mod record;
pub mod report;
pub mod rle;
pub mod run;
pub mod schedule;
pub mod view;
pub mod viewer;
pub mod world;
