//! Parallel imaging on DPS (thesis ch. 7).

pub mod median;
pub mod network;
pub mod run;
