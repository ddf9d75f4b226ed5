//! Conway's Game of Life on DPS (the DPS paper, §5): the bit-parallel kernel, RLE patterns,
//! worlds and PNG output, the simulation graphs (`simple`, Figure 7; `overlap`, Figure 8),
//! the world exposed as a parallel service (Figure 10), and the runner the CLI calls.

pub mod footprint;
pub mod graph;
mod input;
pub mod kernel;
pub mod output;
pub mod record;
pub mod report;
pub mod rle;
pub mod run;
pub mod schedule;
pub mod view;
pub mod world;
