//! What every DPS application shares around the runtime.
//!
//! - [`exit`]: bad input is a [`BadInput`] error, printed once (by rank 0) with exit code
//!   2 before any work; other failures exit 1 and are printed by every rank that has them.
//!   [`parse_args`] treats option errors the same way.
//! - [`output`]: an [`OutputFile`] is checked when the run starts (its directory exists
//!   and is writable) and written to a temporary file that is renamed over the path only
//!   when every byte is flushed; a failed run leaves no partial file.
//! - [`memory`]: [`check_memory`] refuses a run whose data cannot fit in the memory this
//!   node has, with the figures, before anything is allocated.
//! - [`record`]: the fields every app's `--json` record shares ([`Common`]), numbers
//!   written as text when not finite ([`FiniteOrText`]), and [`print_record`].

pub mod exit;
pub mod memory;
pub mod output;
pub mod record;

pub use exit::{finish, input, launch_rank, parse_args, BadInput};
pub use memory::{check_memory, format_bytes};
pub use output::OutputFile;
pub use record::{print as print_record, Common, FiniteOrText};

/// Returns early with a [`BadInput`] error: `bad_input!("--n {n} must be positive")`.
#[macro_export]
macro_rules! bad_input {
    ($($arg:tt)*) => {
        return Err($crate::BadInput::new(format!($($arg)*)).into())
    };
}
