//! Block matrix multiply on DPS: the kernel (strips, blocks, dgemm, serial reference), the
//! graphs of the `pipelined`, `phased` and `farm` variants, and the runner the CLI calls.

pub mod graph;
pub mod kernel;
pub mod record;
pub mod run;
