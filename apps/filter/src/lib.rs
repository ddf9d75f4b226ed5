//! Parallel imaging on DPS (thesis ch. 7): a tiled image striped over the disks of the
//! ranks ([`layout`], [`store`]), process-and-gather with linear filters ([`linear`]) and
//! exchange-process-and-store with the 5×5 median ([`median`], [`network`]) as DPS graphs
//! ([`graph`]), and the command line ([`run`]).

pub mod disk;
pub mod exchange;
pub mod generation;
pub mod graph;
mod lanes;
pub mod layout;
pub mod linear;
pub mod median;
pub mod network;
pub mod output_path;
mod parallel;
pub mod raster;
pub mod record;
pub mod run;
mod select;
pub mod store;
