//! `dps-matmul`: block matrix multiply on DPS (work in progress).

extern crate openblas_src;

fn main() {
    println!("dps-matmul: not implemented yet");
}
