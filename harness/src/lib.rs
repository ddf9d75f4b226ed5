//! What every DPS application, test and benchmark shares around the runtime.
//!
//! - [`exit`]: bad input is a [`BadInput`] error, printed once (by rank 0) with exit code
//!   2 before any work; other failures exit 1 and are printed by every rank that has them.
//!   [`parse_args`] treats option errors the same way.
//! - [`options`]: the options programs share (`--json`, `--verify`, `--seed`, `--map`,
//!   `--reps`/`--warmup`, `--blas-threads`) as `clap` groups to flatten.
//! - [`median`]: the one median of timing samples.
//! - [`output`]: an [`OutputFile`] is checked when the run starts (its directory exists
//!   and is writable) and written to an unnamed file that gets the path only when every
//!   byte is flushed; a failed, aborted or killed run leaves no partial file.
//! - [`memory`]: [`check_memory`] refuses a run whose data cannot fit in the memory this
//!   node has, with the figures, before anything is allocated.
//! - [`record`]: the fields every app's `--json` record shares ([`Common`]), numbers
//!   written as text when not finite ([`FiniteOrText`]), and [`print_record`].

mod cli;
pub mod disk_space;
pub mod exit;
pub mod memory;
pub mod options;
pub mod output;
pub mod record;
pub mod simulate;
mod stats;

pub use cli::{launch_rank, launch_size, parse_args, wait_for_rank_0_to_print};
pub use disk_space::check_disk_space;
pub use exit::{finish, input, main, BadInput};
pub use memory::{check_memory, format_bytes};
pub use options::Repeat;
pub use output::OutputFile;
pub use record::{print as print_record, Common, FiniteOrText};
pub use stats::median;

/// Returns early with a [`BadInput`] error: `bad_input!("--n {n} must be positive")`.
#[macro_export]
macro_rules! bad_input {
    ($($arg:tt)*) => {
        return Err($crate::BadInput::new(format!($($arg)*)).into())
    };
}
