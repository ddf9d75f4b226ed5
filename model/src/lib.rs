//! What DPS predicts from, shared by `dps-bench` (which measures it) and the simulator
//! (which will read it):
//!
//! * [`platform`]: the platform file `dps-bench calibrate --out FILE` writes: latency and
//!   bandwidth per path (intra-node, inter-node; DPS tokens and raw MPI), the CPU cost of
//!   concurrent transfers, and kernel cost tables, with a header that ties it to one machine
//!   and one dps version;
//! * [`fit`]: the least-squares fit of `t(s) = l + s/b` (piecewise when MPI's eager and
//!   rendezvous protocols show);
//! * [`p3l`]: the P3L cost models of the pipe and farm skeletons on BSP (the P3L paper) and the
//!   rules that choose a farm's worker count and grain from them;
//! * [`schedule`]: malleable task graphs scheduled layer by layer and ahead of events (the
//!   scheduling paper), with CPA, the static allocation and an exact solver beside it.

pub mod fit;
pub mod p3l;
pub mod platform;
pub mod schedule;
