//! Parallel imaging on DPS (thesis ch. 7).

pub mod layout;
pub mod linear;
pub mod median;
pub mod network;
pub mod run;
