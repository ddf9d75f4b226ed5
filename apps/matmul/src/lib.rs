//! Block matrix multiply on DPS: the options checked into a plan ([`cli`]), the runner
//! ([`run`]), the graphs of the `pipelined`, `phased` and `farm` variants ([`graph`]), the
//! kernel (strips, blocks, dgemm, serial reference) and the record.

pub mod cli;
pub mod graph;
pub mod kernel;
pub mod record;
pub mod run;
