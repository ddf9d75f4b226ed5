//! Dense linear algebra shared by `dps-matmul` and `dps-lu`: reproducible random matrices,
//! safe wrappers over OpenBLAS's BLAS and LAPACK, the choice of its kernels for this CPU
//! (`kernel_choice`), norms and residuals, Matrix Market input,
//! the memory footprints the apps check before they start, and the cost models that choose
//! their default block sizes (`grain`).
//!
//! Matrices are plain `Vec<f64>`; each function says whether it reads row-major or
//! column-major data.

extern crate openblas_src;

pub mod blas;
pub mod footprint;
pub mod gen;
pub mod grain;
pub mod huge;
pub mod kernel_choice;
pub mod library;
pub mod market;
pub mod norms;
