//! Parallel imaging on DPS (thesis ch. 7): the options of `store`, `load`, `gather`,
//! `median`, `serve` and `client` checked into a plan ([`cli`]) and executed ([`run`]); a
//! tiled image striped over the disks of the ranks ([`layout`], [`store`], read and written
//! by the disk threads of [`disk`]); process-and-gather with linear filters and
//! exchange-process-and-store with the 5×5 median as DPS graphs ([`graph`]); the striped
//! file service of `serve` and its `client`s (the DPS paper, Fig. 5; [`graph::window`]);
//! the kernels and their serial references ([`kernel`]); the record ([`record`]).

pub mod cli;
pub mod disk;
pub mod graph;
pub mod kernel;
pub mod layout;
pub mod output_path;
pub mod raster;
pub mod record;
pub mod run;
pub mod store;
