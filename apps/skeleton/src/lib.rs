//! Skeletonization of binary images as a parallel cellular automaton (the thesis's ch. 8):
//! the thinning rule of eq. (8-1), bit-parallel, with its serial reference (`kernel`); the
//! image cut into cells, each a DPS thread whose state can move between ranks (`cells`);
//! the static distribution of eq. (8-2) and the load balancing by cell migration
//! (`balance`) and rank 0's bookkeeping between rounds (`master`); the graph (`graph`); input
//! and output images (`images`); the options checked into a plan (`cli`), with the memory a
//! run takes (`footprint`), the runner that executes it (`run`) and its record (`record`).

pub mod balance;
pub mod cells;
pub mod cli;
pub mod footprint;
pub mod graph;
pub mod images;
pub mod kernel;
pub mod master;
pub mod record;
pub mod run;
