//! The comparator networks of the 5×5 median: which min/max operations, on which inputs,
//! leave the wanted ranks of them in known slots.
//!
//! The median kernel (see `median`) sorts the five values of every image column of a window
//! row once, merges every two neighbouring sorted columns into a sorted pair of ten
//! ([`Network::merge_columns`]), and takes each output pixel's median from the two pairs and
//! the one column of its window ([`Network::median_of_pairs`]): neighbouring output pixels
//! share columns and pairs, so no pixel sorts its 25 values. Each network is Batcher's
//! odd-even merge sort of 16 or 32 wires (the values and constants below and above every
//! value), pruned in three ways when it is generated:
//! - a comparator whose order is already known (the runs are sorted; earlier comparators
//!   ordered more pairs) is dropped, or becomes a renaming of wires if known reversed;
//!   constants are thereby folded away;
//! - a comparator of which only the minimum (or maximum) is used later computes only that;
//! - a comparator none of whose outputs reaches a wanted rank is dropped.
//!
//! This is the separable-sorting-network approach (A. Adams, "Fast median filters using
//! separable sorting networks", 2021), generated rather than written out by hand. The kernel
//! runs the networks as straight-line code, generated from them into `select.rs` (a test
//! checks it is current: [`Network::rust_fn`]).

/// The number of values a 5×5 window holds.
pub const INPUTS: usize = 25;

/// One operation on two slots: `Min(a, b)` sets `a = min(a, b)`, `Max(a, b)` sets
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

/// A network: operations on `inputs` slots, after which slot `outputs[i]` holds the `i`-th
/// wanted rank.
#[derive(Clone, Debug)]
pub struct Network {
    /// The number of input slots.
    pub inputs: usize,
    /// The operations, in order.
    pub ops: Vec<Op>,
    /// The slots holding the wanted ranks at the end, in the order asked for.
    pub outputs: Vec<usize>,
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
    /// Nothing known but that each of `runs` (slots) is sorted.
    fn sorted_runs(runs: &[std::ops::Range<usize>]) -> Order {
        let mut le = [[false; INPUTS + 2]; INPUTS + 2];
        for (a, row) in le.iter_mut().enumerate() {
            row[a] = true;
            row[HIGH] = true;
        }
        le[LOW] = [true; INPUTS + 2];
        for run in runs {
            for a in run.clone() {
                le[a][a..run.end].fill(true);
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

/// What a network starts from and what it must deliver.
struct Spec {
    /// Input slots `0..inputs`.
    inputs: usize,
    /// Runs of slots known to be sorted.
    runs: Vec<std::ops::Range<usize>>,
    /// Batcher's wires (a power of two): `low` constants, then the runs in the order of
    /// `placement`, then constants above every value.
    wires: usize,
    low: usize,
    placement: Vec<usize>,
    /// The ranks (0 = smallest) wanted.
    wanted: Vec<usize>,
}

impl Network {
    /// Sorts two sorted columns of five (slots 0-4 and 5-9) into slots `outputs[0..10]`.
    pub fn merge_columns() -> Network {
        Network::generate(Spec {
            inputs: 10,
            runs: vec![0..5, 5..10],
            wires: 16,
            low: 3,
            placement: vec![0, 1],
            wanted: (0..10).collect(),
        })
    }

    /// The median of 25 values given as two sorted runs of ten (slots 0-9 and 10-19: two
    /// pairs of columns) and one sorted run of five (slots 20-24: the fifth column).
    /// (The constants and placement are the best of the 48 tried: 78 min/max instructions,
    /// where five sorted columns of five take 146.)
    pub fn median_of_pairs() -> Network {
        Network::generate(Spec {
            inputs: INPUTS,
            runs: vec![0..10, 10..20, 20..25],
            wires: 32,
            low: 1,
            placement: vec![2, 0, 1],
            wanted: vec![INPUTS / 2],
        })
    }

    fn generate(spec: Spec) -> Network {
        assert!(spec.inputs <= INPUTS && spec.low + spec.inputs <= spec.wires);
        let mut comparators = Vec::new();
        batcher_sort(0, spec.wires, &mut comparators);
        let mut wires = Vec::with_capacity(spec.wires);
        wires.extend(std::iter::repeat_n(Wire::Low, spec.low));
        for &run in &spec.placement {
            wires.extend(spec.runs[run].clone().map(Wire::Slot));
        }
        assert_eq!(wires.len(), spec.low + spec.inputs, "the placement names every run once");
        wires.resize(spec.wires, Wire::High);
        let mut order = Order::sorted_runs(&spec.runs);
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
        let outputs: Vec<usize> = spec
            .wanted
            .iter()
            .map(|&rank| match wires[spec.low + rank] {
                Wire::Slot(s) => s,
                _ => unreachable!("a rank of the values is a value"),
            })
            .collect();
        // Backwards: keep only what reaches a wanted output.
        let mut live = [false; INPUTS];
        for &s in &outputs {
            live[s] = true;
        }
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
        Network { inputs: spec.inputs, ops, outputs }
    }

    /// Min/max instructions per lane vector: two for a `MinMax`, one otherwise.
    pub fn instructions(&self) -> usize {
        self.ops.iter().map(|op| if matches!(op, Op::MinMax(..)) { 2 } else { 1 }).sum()
    }

    /// Applies the network to scalars (the reference the tests compare the vector code with)
    /// and returns the wanted ranks.
    pub fn apply(&self, slots: &mut [u8]) -> Vec<u8> {
        assert_eq!(slots.len(), self.inputs);
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
        self.outputs.iter().map(|&s| slots[s]).collect()
    }

    /// The network as a Rust function on lane vectors (`super::lanes::Lanes`): straight-line
    /// code the compiler keeps in registers, taking the inputs by value and returning the
    /// wanted ranks. `select.rs` holds the output for the kernel's networks.
    pub fn rust_fn(&self, name: &str, doc: &str) -> String {
        let (n, m) = (self.inputs, self.outputs.len());
        let mut written = vec![false; n];
        for &op in &self.ops {
            match op {
                Op::Min(a, _) => written[a as usize] = true,
                Op::Max(_, b) => written[b as usize] = true,
                Op::MinMax(a, b) => (written[a as usize], written[b as usize]) = (true, true),
            }
        }
        let binding = |s: usize| if written[s] { format!("mut s{s}") } else { format!("s{s}") };
        let mut out = format!(
            "/// {doc}
#[inline(always)]
pub(crate) fn {name}<V: Lanes>(s: [V; {n}]) -> [V; {m}] {{
"
        );
        let bindings: Vec<String> = (0..n).map(binding).collect();
        out += &format!(
            "    let [{}] = s;
",
            bindings.join(", ")
        );
        for &op in &self.ops {
            out += &match op {
                Op::Min(a, b) => format!(
                    "    s{a} = s{a}.min(s{b});
"
                ),
                Op::Max(a, b) => format!(
                    "    s{b} = s{a}.max(s{b});
"
                ),
                Op::MinMax(a, b) => format!(
                    "    (s{a}, s{b}) = (s{a}.min(s{b}), s{a}.max(s{b}));
"
                ),
            };
        }
        let outputs: Vec<String> = self.outputs.iter().map(|s| format!("s{s}")).collect();
        out += &format!(
            "    [{}]
}}
",
            outputs.join(", ")
        );
        out
    }
}

#[cfg(test)]
mod tests {
    use rand::{Rng, SeedableRng};

    use super::*;

    /// The generated functions' text, from the networks: what this file must contain.
    fn generated() -> [String; 2] {
        [
            Network::merge_columns().rust_fn("merge_columns", MERGE_DOC),
            Network::median_of_pairs().rust_fn("median_of_pairs", MEDIAN_DOC),
        ]
    }

    const MERGE_DOC: &str = "Two sorted columns of five (inputs 0-4, 5-9) as one sorted run of ten.";
    const MEDIAN_DOC: &str = "The median of two sorted runs of ten (inputs 0-9, 10-19) and one of five (20-24).";

    /// The kernel's networks with their sorted input runs.
    fn networks() -> [(Network, Vec<std::ops::Range<usize>>); 2] {
        [(Network::merge_columns(), vec![0..5, 5..10]), (Network::median_of_pairs(), vec![0..10, 10..20, 20..25])]
    }

    /// The wanted ranks of `values` as the networks deliver them: all ten for the merge,
    /// the median for the median.
    fn ranks(values: &[u8], wanted: usize) -> Vec<u8> {
        let mut sorted = values.to_vec();
        sorted.sort_unstable();
        if wanted == values.len() {
            sorted
        } else {
            vec![sorted[values.len() / 2]]
        }
    }

    #[test]
    fn the_networks_select_their_ranks_of_random_and_tied_values() {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(7);
        for (net, runs) in networks() {
            for round in 0..20_000 {
                // Few distinct values in some rounds: ties are where a wrong prune shows.
                let range = if round % 2 == 0 { 256 } else { 3 };
                let values: Vec<u8> = (0..net.inputs).map(|_| rng.gen_range(0..range) as u8).collect();
                let mut slots = values.clone();
                for run in &runs {
                    slots[run.clone()].sort_unstable();
                }
                assert_eq!(net.apply(&mut slots), ranks(&values, net.outputs.len()), "{values:?}");
            }
        }
    }

    #[test]
    fn every_zero_one_input_of_sorted_runs_gives_its_ranks() {
        // The 0-1 principle: a comparator network delivers the ranks of every input iff it
        // does of every 0-1 input. A 0-1 input of sorted runs is given by the count of ones
        // in each run (11·11·6 cases for the median, 6·6 for the merge): exhaustive.
        for (net, runs) in networks() {
            let cases: usize = runs.iter().map(|r| r.len() + 1).product();
            for code in 0..cases {
                let mut slots = vec![0u8; net.inputs];
                let mut rest = code;
                for run in &runs {
                    let ones = rest % (run.len() + 1);
                    rest /= run.len() + 1;
                    slots[run.end - ones..run.end].fill(1);
                }
                let want = ranks(&slots, net.outputs.len());
                assert_eq!(net.apply(&mut slots.clone()), want, "{slots:?}");
            }
        }
    }

    #[test]
    fn pruning_leaves_far_fewer_operations_than_a_full_sort() {
        let mut full = Vec::new();
        batcher_sort(0, 32, &mut full);
        let net = Network::median_of_pairs();
        assert!(net.ops.len() < full.len() / 3, "{} of {}", net.ops.len(), full.len());
        assert_eq!((net.instructions(), Network::merge_columns().instructions()), (78, 30));
    }

    #[test]
    fn the_generated_code_in_select_rs_is_current() {
        // Compared without white space, so that rustfmt may lay the file out.
        let squeeze = |s: &str| s.chars().filter(|c| !c.is_whitespace()).collect::<String>();
        let file = squeeze(include_str!("select.rs"));
        for code in generated() {
            assert!(file.contains(&squeeze(&code)), "select.rs is stale; regenerate it from:\n{code}");
        }
    }

    #[test]
    #[ignore = "prints the generated code: cargo test -p dps-filter print_generated -- --ignored --nocapture"]
    fn print_generated() {
        for code in generated() {
            println!("{code}");
        }
    }
}
