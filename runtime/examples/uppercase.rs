//! The DPS paper's tutorial: split a string into characters, upper-case them on a thread
//! collection, merge them back in order.
//!
//! ```text
//! scripts/mpirun -n 2 target/debug/examples/uppercase --map "0 1*2" "hello world"
//! ```
#![deny(warnings)]

use dps::{route, Node};
use serde::{Deserialize, Serialize};

#[derive(clap::Parser)]
#[command(name = "uppercase", allow_negative_numbers = true)] // so that "-1" is a bad value, not an unknown option
struct Args {
    /// Mapping of the compute collection (default: one thread per rank).
    #[arg(long, default_value = "all")]
    map: String,
    #[command(flatten)]
    runtime: dps::RuntimeArgs,
    /// The text to convert.
    #[arg(default_value = "hello from dynamic parallel schedules")]
    text: String,
}

/// A character and its position in the string (the paper's `CharToken`).
#[derive(Serialize, Deserialize)]
struct CharToken {
    chr: char,
    pos: usize,
    /// Rank that converted it, to show where the work went.
    rank: usize,
}

/// The merge's accumulator: the characters in their positions.
struct Collect(Vec<char>);

impl dps::Merge<()> for Collect {
    type In = CharToken;
    type Out = String;
    type Acc = Vec<Option<char>>;
    fn start(&self, _: &mut ()) -> Self::Acc {
        vec![None; self.0.len()]
    }
    fn merge(&self, _: &mut (), acc: &mut Self::Acc, t: CharToken) {
        acc[t.pos] = Some(t.chr);
    }
    fn finish(&self, _: &mut (), acc: Self::Acc) -> String {
        acc.into_iter().map(|c| c.expect("every character merged")).collect()
    }
}

fn main() -> std::process::ExitCode {
    dps_harness::main(run)
}

fn run(args: &Args) -> Result<(), dps::Error> {
    let rt = args.runtime.start()?;
    let main = rt.collection("main", "0", |_| ())?;
    let compute = rt.collection("compute", &args.map, |_| ())?;
    let rank = rt.rank();

    let split = Node::split("split_string", &main, route::fixed(0), |_: &mut (), s: String| {
        s.chars().enumerate().map(|(pos, chr)| CharToken { chr, pos, rank: 0 }).collect::<Vec<_>>()
    });
    let upper = Node::leaf("to_upper", &compute, route::round_robin(), move |_: &mut (), t: CharToken| CharToken {
        chr: t.chr.to_ascii_uppercase(),
        pos: t.pos,
        rank,
    });
    let merge = Node::merge("merge_string", &main, Collect(args.text.chars().collect()));
    let graph = rt.graph("uppercase", split >> upper >> merge)?;

    if rt.is_root() {
        let out = rt.call(&graph, args.text.clone())?;
        assert_eq!(out, args.text.to_uppercase(), "the graph must upper-case every character");
        println!("{out}");
    }
    rt.shutdown()?;
    Ok(())
}
