//! Block LU factorization with partial pivoting on DPS: the kernel (panel factorization,
//! panel application, serial reference, checks), the graph built to the problem size, and
//! the runner the CLI calls.

pub mod alloc;
pub mod dynamic;
pub mod dynamic_run;
pub mod graph;
pub mod iterations;
pub mod kernel;
pub mod record;
pub mod run;
