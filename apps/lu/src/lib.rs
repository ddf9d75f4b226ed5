//! Block LU factorization with partial pivoting on DPS: the kernel (panel factorization,
//! panel application, serial reference, checks), the graph built to the problem size, and
//! the runner the CLI calls.

pub mod graph;
pub mod kernel;
pub mod record;
pub mod run;
