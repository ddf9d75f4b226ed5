//! Block LU factorization with partial pivoting on DPS: the options checked into a plan
//! ([`cli`]), the runner ([`run`]), the graphs of the staged (`stream`, `merge-split`) and
//! dynamic pipelines around their shared column blocks ([`graph`]), the kernel (panel
//! factorization, panel application, serial reference, checks), the dynamic variant's
//! thread allocation ([`alloc`], [`scheduled`]: the layered scheduler's and `--withdraw`)
//! and per-iteration efficiency ([`iterations`]), and the record.

pub mod alloc;
pub mod cli;
pub mod graph;
pub mod iterations;
pub mod kernel;
pub mod record;
pub mod run;
pub mod scheduled;
