//! Property tests of the TSPLIB parser: random bytes, random keyword soups, and random
//! mutations and truncations of the shipped instances always give `Ok` or `Err`, never a
//! panic; and every instance it accepts keeps the weight bound (`n * max weight <= 2^53`,
//! non-negative, symmetric, zero diagonal, finite coordinates), so no tour length of it
//! can overflow.

use proptest::prelude::*;

use dps_tsp::kernel::instance::{weight_limit, Instance, MAX_CITIES};
use dps_tsp::tsplib::{parse_with, ParseError};

/// The shipped instances, read once.
fn shipped() -> &'static [String] {
    static FILES: std::sync::OnceLock<Vec<String>> = std::sync::OnceLock::new();
    FILES.get_or_init(|| {
        let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/data");
        let mut names: Vec<_> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|e| e == "tsp"))
            .collect();
        names.sort();
        names.iter().map(|p| std::fs::read_to_string(p).unwrap()).collect()
    })
}

/// Parses with a small size limit (instead of this node's memory), so that a mutated
/// DIMENSION cannot make a case allocate gigabytes.
fn parse(text: &str) -> Result<Instance, ParseError> {
    parse_with(text, "prop", &|n| {
        if n > 2000 {
            anyhow::bail!("DIMENSION {n} is above this test's 2000")
        } else {
            Ok(())
        }
    })
}

/// What every accepted instance guarantees.
fn check_accepted(inst: &Instance) -> Result<(), TestCaseError> {
    let n = inst.n;
    prop_assert!((3..=MAX_CITIES).contains(&n), "n {}", n);
    let d = inst.matrix();
    prop_assert_eq!(d.len(), n * n);
    let limit = weight_limit(n);
    for i in 0..n {
        prop_assert_eq!(d[i * n + i], 0);
        for j in 0..n {
            let w = d[i * n + j];
            prop_assert!((0..=limit).contains(&w), "d({}, {}) = {} outside 0..={}", i, j, w, limit);
            prop_assert_eq!(w, d[j * n + i]);
        }
    }
    let largest = d.iter().copied().max().unwrap_or(0);
    prop_assert!(i128::from(largest) * n as i128 <= 1i128 << 53);
    let tour: Vec<usize> = (0..n).collect();
    prop_assert!(inst.checked_tour_length(&tour).is_some_and(|l| l <= 1 << 53));
    if let Some(c) = &inst.coords {
        prop_assert_eq!(c.len(), n);
        prop_assert!(c.iter().flatten().all(|x| x.is_finite()));
    }
    Ok(())
}

fn check(text: &str) -> Result<(), TestCaseError> {
    match parse(text) {
        Ok(inst) => check_accepted(&inst),
        Err(e) => {
            prop_assert!(!e.message.is_empty());
            Ok(())
        }
    }
}

/// Values that stress the parser where a number is expected.
const NASTY: &[&str] = &[
    "0",
    "1",
    "2",
    "-1",
    "3.5",
    "1e300",
    "-1e300",
    "1e400",
    "inf",
    "-inf",
    "nan",
    "NaN",
    "9223372036854775807",
    "9223372036854775808",
    "18446744073709551616",
    "4503599627370496",
    "65535",
    "65536",
    "2001",
    "x",
    "",
    "EOF",
];

/// Keywords and fragments of TSPLIB files.
const WORDS: &[&str] = &[
    "NAME: t",
    "TYPE: TSP",
    "TYPE: ATSP",
    "COMMENT: c",
    "DIMENSION:",
    "EDGE_WEIGHT_TYPE: EUC_2D",
    "EDGE_WEIGHT_TYPE: CEIL_2D",
    "EDGE_WEIGHT_TYPE: ATT",
    "EDGE_WEIGHT_TYPE: GEO",
    "EDGE_WEIGHT_TYPE: EXPLICIT",
    "EDGE_WEIGHT_FORMAT: FULL_MATRIX",
    "EDGE_WEIGHT_FORMAT: UPPER_ROW",
    "EDGE_WEIGHT_FORMAT: LOWER_ROW",
    "EDGE_WEIGHT_FORMAT: UPPER_DIAG_ROW",
    "EDGE_WEIGHT_FORMAT: LOWER_DIAG_ROW",
    "NODE_COORD_SECTION",
    "DISPLAY_DATA_SECTION",
    "EDGE_WEIGHT_SECTION",
    "EOF",
    "\n",
    "\n",
    " ",
    ":",
];

/// One edit of a text.
#[derive(Debug, Clone)]
enum Edit {
    /// Cut the text at this fraction of its length.
    Truncate(f64),
    /// Remove this many bytes at a fraction of the length.
    Delete(f64, usize),
    /// Insert a string at a fraction of the length.
    Insert(f64, String),
    /// Replace the k-th whitespace-separated token (modulo their count) with a nasty value.
    Token(usize, &'static str),
    /// Duplicate the k-th line (modulo the line count).
    DuplicateLine(usize),
    /// Replace the k-th numeric token (modulo their count) with another number: the file
    /// stays well formed, the values move (up to beyond the weight bound).
    Number(usize, String),
}

fn number() -> impl Strategy<Value = String> {
    prop_oneof![
        (0..1000u64).prop_map(|v| v.to_string()),
        (0..1u64 << 62).prop_map(|v| v.to_string()),
        ((1u64 << 47)..(1u64 << 49)).prop_map(|v| v.to_string()),
        (-1e6..1e6f64).prop_map(|v| v.to_string()),
        any::<f64>().prop_map(|v| format!("{v:e}")),
    ]
}

fn edit() -> impl Strategy<Value = Edit> {
    let at = 0.0..1.0f64;
    prop_oneof![
        1 => at.clone().prop_map(Edit::Truncate),
        1 => (at.clone(), 1..200usize).prop_map(|(a, n)| Edit::Delete(a, n)),
        1 => (at, prop_oneof![proptest::sample::select(NASTY).prop_map(str::to_string), "[ -~\n]{0,12}"])
            .prop_map(|(a, s)| Edit::Insert(a, s)),
        1 => (any::<usize>(), proptest::sample::select(NASTY)).prop_map(|(k, v)| Edit::Token(k, v)),
        1 => any::<usize>().prop_map(Edit::DuplicateLine),
        4 => (any::<usize>(), number()).prop_map(|(k, v)| Edit::Number(k, v)),
    ]
}

/// The byte index at `fraction` of `text`, moved back to a character boundary.
fn index(text: &str, fraction: f64) -> usize {
    let mut i = ((text.len() as f64) * fraction) as usize;
    while !text.is_char_boundary(i) {
        i -= 1;
    }
    i
}

fn apply(text: &str, edit: &Edit) -> String {
    match edit {
        Edit::Truncate(a) => text[..index(text, *a)].to_string(),
        Edit::Number(k, v) => {
            let numbers: Vec<(usize, &str)> = text
                .split_whitespace()
                .filter(|t| t.parse::<f64>().is_ok())
                .map(|t| (t.as_ptr() as usize - text.as_ptr() as usize, t))
                .collect();
            if numbers.is_empty() {
                return text.to_string();
            }
            let (at, t) = numbers[k % numbers.len()];
            format!("{}{v}{}", &text[..at], &text[at + t.len()..])
        }
        Edit::Delete(a, n) => {
            let from = index(text, *a);
            let to = index(text, ((from + n) as f64 / text.len().max(1) as f64).min(1.0)).max(from);
            format!("{}{}", &text[..from], &text[to..])
        }
        Edit::Insert(a, s) => {
            let i = index(text, *a);
            format!("{}{s}{}", &text[..i], &text[i..])
        }
        Edit::Token(k, v) => {
            let tokens: Vec<(usize, &str)> =
                text.split_whitespace().map(|t| (t.as_ptr() as usize - text.as_ptr() as usize, t)).collect();
            if tokens.is_empty() {
                return text.to_string();
            }
            let (at, t) = tokens[k % tokens.len()];
            format!("{}{v}{}", &text[..at], &text[at + t.len()..])
        }
        Edit::DuplicateLine(k) => {
            let lines: Vec<&str> = text.lines().collect();
            if lines.is_empty() {
                return text.to_string();
            }
            let k = k % lines.len();
            let mut out: Vec<&str> = lines[..=k].to_vec();
            out.extend_from_slice(&lines[k..]);
            out.join("\n")
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 96, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn random_bytes_are_ok_or_err(bytes in proptest::collection::vec(any::<u8>(), 0..600)) {
        check(&String::from_utf8_lossy(&bytes))?;
    }

    #[test]
    fn keyword_soups_are_ok_or_err(
        parts in proptest::collection::vec(
            prop_oneof![proptest::sample::select(WORDS), proptest::sample::select(NASTY)], 0..60)
    ) {
        check(&parts.join(" "))?;
        check(&parts.join("\n"))?;
    }

    #[test]
    fn mutated_shipped_instances_are_ok_or_err(
        file in 0..12usize,
        edits in proptest::collection::vec(edit(), 1..4),
    ) {
        let files = shipped();
        let mut text = files[file % files.len()].clone();
        for e in &edits {
            text = apply(&text, e);
        }
        check(&text)?;
    }

    /// Numbers moved within well-formed files: many are accepted, and those must keep the
    /// bound (values up to 2^62 and just around 2^53 / n are drawn).
    #[test]
    fn renumbered_shipped_instances_keep_the_bound(
        file in 0..12usize,
        edits in proptest::collection::vec((any::<usize>(), number()), 1..4),
    ) {
        let files = shipped();
        let mut text = files[file % files.len()].clone();
        for (k, v) in edits {
            text = apply(&text, &Edit::Number(k, v));
        }
        check(&text)?;
    }

    /// A small valid instance with arbitrary coordinates (within f64) is accepted only
    /// within the bound, and refused with the line of a city otherwise.
    #[test]
    fn arbitrary_coordinates_keep_the_bound(
        xy in proptest::collection::vec((any::<f64>(), any::<f64>()), 3..12),
        metric in proptest::sample::select(&["EUC_2D", "CEIL_2D", "ATT", "GEO"][..]),
    ) {
        let mut text = format!("NAME: p\nTYPE: TSP\nDIMENSION: {}\nEDGE_WEIGHT_TYPE: {metric}\nNODE_COORD_SECTION\n", xy.len());
        for (k, (x, y)) in xy.iter().enumerate() {
            text.push_str(&format!("{} {x:e} {y:e}\n", k + 1));
        }
        match parse(&text) {
            Ok(inst) => check_accepted(&inst)?,
            Err(e) => prop_assert!(e.line >= 6, "{}", e),
        }
    }
}

#[test]
fn every_shipped_instance_parses_and_keeps_the_bound() {
    for text in shipped() {
        let inst = parse(text).unwrap();
        check_accepted(&inst).unwrap();
    }
}
