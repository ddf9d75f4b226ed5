//! The selection network of the 5×5 median: which min/max operations, on which of 25
//! inputs, leave the median of 25 values in one of them.
//!
//! The inputs are five sorted columns of five (the median kernel sorts each image column's
//! five values once per output row and shares them between the five output pixels whose
//! window contains that column; see `median`). The network is Batcher's odd-even merge sort
//! of 32 wires (the 25 values and 7 constants: 3 below and 4 above every value, so the median
//! is sorted output 15), pruned in three ways when it is generated, once:
//! - a comparator whose order is already known (the columns are sorted; earlier comparators
//!   ordered more pairs) is dropped, or becomes a renaming of wires if known reversed;
//!   constants are thereby folded away;
//! - a comparator of which only the minimum (or maximum) is used later computes only that;
//! - a comparator none of whose outputs reaches the median is dropped.
//!
//! This is the separable-sorting-network approach (A. Adams, "Fast median filters using
//! separable sorting networks", 2021), generated rather than written out by hand.

/// The number of values a 5×5 window holds.
pub const INPUTS: usize = 25;

const WIRES: usize = 32;
/// Constants below every value, placed before the values in sorted order.
const LOW_PADS: usize = 3;
/// The median's index in the sorted 32 wires: 3 constants below, then the 13th value.
const MEDIAN_WIRE: usize = LOW_PADS + INPUTS / 2;

/// One operation on two slots of 25: `Min(a, b)` sets `a = min(a, b)`, `Max(a, b)` sets
/// `b = max(a, b)`, `MinMax(a, b)` does both (with the values before the operation).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Op {
    /// `a = min(a, b)`, `b` kept.
    Min(u8, u8),
    /// `b = max(a, b)`, `a` kept.
    Max(u8, u8),
    /// `(a, b) = (min, max)`.
    MinMax(u8, u8),
}

/// The network: operations on the 25 input slots (slot `5·column + k` holds the `k`-th
/// smallest value of column `column`), after which slot `median` holds the median.
#[derive(Clone, Debug)]
pub struct Network {
    /// The operations, in order.
    pub ops: Vec<Op>,
    /// The slot holding the median at the end.
    pub median: usize,
}

/// What a wire holds while the network is generated.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Wire {
    Slot(usize),
    Low,
    High,
}

fn batcher_merge(lo: usize, n: usize, r: usize, out: &mut Vec<(usize, usize)>) {
    let step = r * 2;
    if step < n {
        batcher_merge(lo, n, step, out);
        batcher_merge(lo + r, n, step, out);
        let mut i = lo + r;
        while i + r < lo + n {
            out.push((i, i + r));
            i += step;
        }
    } else {
        out.push((lo, lo + r));
    }
}

fn batcher_sort(lo: usize, n: usize, out: &mut Vec<(usize, usize)>) {
    if n > 1 {
        let m = n / 2;
        batcher_sort(lo, m, out);
        batcher_sort(lo + m, m, out);
        batcher_merge(lo, n, 1, out);
    }
}

/// Known order between the values of the (at most 25) slots and the two constants: index
/// 25 is the low constant, 26 the high one. `le[a][b]`: a ≤ b for every input.
struct Order {
    le: [[bool; INPUTS + 2]; INPUTS + 2],
}

const LOW: usize = INPUTS;
const HIGH: usize = INPUTS + 1;

impl Order {
    fn sorted_columns() -> Order {
        let mut le = [[false; INPUTS + 2]; INPUTS + 2];
        for (a, row) in le.iter_mut().enumerate() {
            row[a] = true;
            row[HIGH] = true;
        }
        le[LOW] = [true; INPUTS + 2];
        for column in 0..5 {
            for k in 0..5 {
                for k2 in k..5 {
                    le[5 * column + k][5 * column + k2] = true;
                }
            }
        }
        Order { le }
    }

    fn index(w: Wire) -> usize {
        match w {
            Wire::Slot(s) => s,
            Wire::Low => LOW,
            Wire::High => HIGH,
        }
    }

    /// After `(a, b) = (min, max)` on two slots: what is known of the new values.
    #[allow(clippy::needless_range_loop)] // x indexes rows and columns of two matrices
    fn compare(&mut self, a: usize, b: usize) {
        let old = self.le;
        for x in 0..INPUTS + 2 {
            if x == a || x == b {
                continue;
            }
            // x ≤ min iff x ≤ both; x ≤ max if x ≤ either; min ≤ x if either ≤ x; max ≤ x iff both ≤ x.
            self.le[x][a] = old[x][a] && old[x][b];
            self.le[x][b] = old[x][a] || old[x][b];
            self.le[a][x] = old[a][x] || old[b][x];
            self.le[b][x] = old[a][x] && old[b][x];
        }
        self.le[a][b] = true;
        self.le[b][a] = old[a][b] && old[b][a];
        // Transitive closure (27 nodes, a few hundred comparators: cheap, once).
        for k in 0..INPUTS + 2 {
            for i in 0..INPUTS + 2 {
                if self.le[i][k] {
                    for j in 0..INPUTS + 2 {
                        if self.le[k][j] {
                            self.le[i][j] = true;
                        }
                    }
                }
            }
        }
    }
}

impl Network {
    /// The median of 25 values given as five sorted columns of five.
    pub fn median_of_sorted_columns() -> Network {
        let mut comparators = Vec::new();
        batcher_sort(0, WIRES, &mut comparators);
        // Wire placement: the constants first and last, then the columns in order, so that
        // the first merges of Batcher's sort meet already-sorted runs.
        let mut wires = Vec::with_capacity(WIRES);
        wires.extend(std::iter::repeat_n(Wire::Low, LOW_PADS));
        wires.extend((0..INPUTS).map(Wire::Slot));
        wires.resize(WIRES, Wire::High);
        let mut order = Order::sorted_columns();
        let mut forward = Vec::new();
        for (i, j) in comparators {
            let (a, b) = (Order::index(wires[i]), Order::index(wires[j]));
            if order.le[a][b] {
                continue;
            }
            if order.le[b][a] {
                wires.swap(i, j);
                continue;
            }
            let (Wire::Slot(sa), Wire::Slot(sb)) = (wires[i], wires[j]) else {
                unreachable!("a constant is ordered against every value");
            };
            order.compare(sa, sb);
            forward.push((sa, sb));
        }
        let Wire::Slot(median) = wires[MEDIAN_WIRE] else { unreachable!("the median is a value") };
        // Backwards: keep only what reaches the median.
        let mut live = [false; INPUTS];
        live[median] = true;
        let mut ops = Vec::new();
        for &(a, b) in forward.iter().rev() {
            let op = match (live[a], live[b]) {
                (false, false) => continue,
                (true, false) => Op::Min(a as u8, b as u8),
                (false, true) => Op::Max(a as u8, b as u8),
                (true, true) => Op::MinMax(a as u8, b as u8),
            };
            live[a] = true;
            live[b] = true;
            ops.push(op);
        }
        ops.reverse();
        Network { ops, median }
    }

    /// Applies the network to 25 scalars (the reference the tests compare the vector code with).
    pub fn apply(&self, slots: &mut [u8; INPUTS]) -> u8 {
        for &op in &self.ops {
            match op {
                Op::Min(a, b) => slots[a as usize] = slots[a as usize].min(slots[b as usize]),
                Op::Max(a, b) => slots[b as usize] = slots[a as usize].max(slots[b as usize]),
                Op::MinMax(a, b) => {
                    let (x, y) = (slots[a as usize], slots[b as usize]);
                    slots[a as usize] = x.min(y);
                    slots[b as usize] = x.max(y);
                }
            }
        }
        slots[self.median]
    }
}

#[cfg(test)]
mod tests {
    use rand::{Rng, SeedableRng};

    use super::*;

    fn sorted_columns(values: &[u8; INPUTS]) -> [u8; INPUTS] {
        let mut slots = *values;
        for column in slots.chunks_mut(5) {
            column.sort_unstable();
        }
        slots
    }

    #[test]
    fn the_network_selects_the_median_of_random_and_tied_values() {
        let net = Network::median_of_sorted_columns();
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(7);
        for round in 0..20_000 {
            // Few distinct values in some rounds: ties are where a wrong prune shows.
            let range = if round % 2 == 0 { 256 } else { 3 };
            let values: [u8; INPUTS] = std::array::from_fn(|_| rng.gen_range(0..range) as u8);
            let mut sorted = values;
            sorted.sort_unstable();
            let mut slots = sorted_columns(&values);
            assert_eq!(net.apply(&mut slots), sorted[12], "{values:?}");
        }
    }

    #[test]
    fn zero_one_inputs_with_one_to_thirteen_ones_cover_the_median_threshold() {
        // The 0-1 principle: a comparator network selects rank 12 of every input iff it does
        // of every 0-1 input. Every 0-1 input of sorted columns is given by the count of
        // ones in each column (6^5 cases): exhaustive.
        let net = Network::median_of_sorted_columns();
        for code in 0..6usize.pow(5) {
            let ones: [usize; 5] = std::array::from_fn(|c| code / 6usize.pow(c as u32) % 6);
            let slots: [u8; INPUTS] = std::array::from_fn(|s| u8::from(s % 5 >= 5 - ones[s / 5]));
            let total: usize = ones.iter().sum();
            let mut work = slots;
            assert_eq!(net.apply(&mut work), u8::from(total >= 13), "ones per column {ones:?}");
        }
    }

    #[test]
    fn pruning_leaves_far_fewer_operations_than_a_full_sort() {
        let net = Network::median_of_sorted_columns();
        let mut full = Vec::new();
        batcher_sort(0, WIRES, &mut full);
        assert!(net.ops.len() < full.len() / 2, "{} of {}", net.ops.len(), full.len());
    }
}
