//! The kernels: plain functions on plain pixels, and the serial references `--verify`
//! compares to.
//!
//! - [`median`]: the 5×5 median on 8-bit pixels (a vector kernel chosen at run time), the
//!   whole-image median of the serial variant and `--verify`, and a naive reference; its
//!   comparator networks ([`network`]) run as generated straight-line code (`select`) on
//!   lane vectors (`lanes`: one pixel, AVX2 or AVX-512).
//! - [`linear`]: the linear filters of process-and-gather, the tile's enlarged convolution,
//!   the overlap-add, and the zero-padded convolution of an image (the reference).

mod lanes;
pub mod linear;
pub mod median;
pub mod network;
mod select;
