//! The request type of the example service `NAME.squares`, shared by its server and its
//! clients (two programs: each compiles this file; the runtime compares the types by their
//! names without module paths, `Range`).

use serde::{Deserialize, Serialize};

/// The numbers `start..start + len`.
#[derive(Serialize, Deserialize, Clone, Copy, Debug)]
pub(crate) struct Range {
    /// The first number.
    pub(crate) start: u64,
    /// How many numbers.
    pub(crate) len: u32,
}
