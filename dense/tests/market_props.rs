//! Property tests of the Matrix Market reader: random text and random mutations and
//! truncations of valid files always give an error or a valid matrix (n×n finite entries),
//! never a panic; written matrices read back exactly.

use dps_dense::market::{Format, MatrixFile};
use proptest::prelude::*;

/// The reader as an application uses it: the header first, then the entries only if they
/// fit in the memory a caller would grant (the apps call `check_memory` here).
fn read(bytes: &[u8]) -> Result<(usize, Vec<f64>), String> {
    let file = MatrixFile::from_reader("prop", bytes).map_err(|e| e.to_string())?;
    if file.bytes_needed() > 64 << 20 {
        return Err("too large for the test".into());
    }
    let n = file.order();
    let a = file.read().map_err(|e| e.to_string())?;
    Ok((n, a))
}

fn assert_valid(result: &Result<(usize, Vec<f64>), String>) {
    match result {
        Ok((n, a)) => {
            assert!(*n >= 1);
            assert_eq!(a.len(), n * n);
            assert!(a.iter().all(|x| x.is_finite()), "a non-finite entry was accepted: {a:?}");
        }
        Err(message) => assert!(message.starts_with("prop:"), "the error does not name the file: {message}"),
    }
}

const VALID: [&str; 4] = [
    "%%MatrixMarket matrix array real general\n% a comment\n3 3\n1\n2.5\n-3e2\n4\n5\n6\n7\n8\n9.0\n",
    "%%MatrixMarket matrix coordinate real general\n3 3 4\n1 1 1.5\n3 2 -2\n2 3 1e-3\n3 3 4\n",
    "%%MatrixMarket matrix array integer general\n2 2\n1 2\n3 4\n",
    "%%MatrixMarket matrix coordinate real general\n%\n\n2 2 0\n",
];

/// Characters that mean something to the reader, and some that do not.
const ALPHABET: &[u8] = b"0123456789 \n\t%-+.eEnaifxNI\0\xff";

/// Words the reader must refuse or handle: non-finite values, huge and negative numbers.
const WORDS: &[&str] = &["nan", "inf", "-Infinity", "1e999", "99999999999999999999", "-1", "0", " 7 ", "\n% c\n"];

#[derive(Debug, Clone)]
enum Edit {
    Delete(usize),
    Insert(usize, u8),
    Replace(usize, u8),
    /// Replaces the whitespace-separated word around a position (or inserts at it).
    Word(usize, &'static str),
}

fn edit() -> impl Strategy<Value = Edit> {
    let byte = proptest::sample::select(ALPHABET);
    prop_oneof![
        any::<usize>().prop_map(Edit::Delete),
        (any::<usize>(), byte.clone()).prop_map(|(i, b)| Edit::Insert(i, b)),
        (any::<usize>(), byte).prop_map(|(i, b)| Edit::Replace(i, b)),
        (any::<usize>(), proptest::sample::select(WORDS)).prop_map(|(i, w)| Edit::Word(i, w)),
    ]
}

fn apply(text: &str, edits: &[Edit], truncate: Option<usize>) -> Vec<u8> {
    let mut bytes = text.as_bytes().to_vec();
    for e in edits {
        let len = bytes.len().max(1);
        match *e {
            Edit::Delete(i) if !bytes.is_empty() => {
                bytes.remove(i % len);
            }
            Edit::Insert(i, b) => bytes.insert(i % (bytes.len() + 1), b),
            Edit::Replace(i, b) if !bytes.is_empty() => bytes[i % len] = b,
            Edit::Word(i, w) => {
                let at = i % (bytes.len() + 1);
                let start = bytes[..at].iter().rposition(u8::is_ascii_whitespace).map_or(0, |p| p + 1);
                let end = bytes[at..].iter().position(u8::is_ascii_whitespace).map_or(bytes.len(), |p| at + p);
                bytes.splice(start..end, w.bytes());
            }
            _ => {}
        }
    }
    if let Some(t) = truncate {
        bytes.truncate(t % (bytes.len() + 1));
    }
    bytes
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn random_text_is_an_error_or_a_valid_matrix(text in ".{0,200}") {
        assert_valid(&read(text.as_bytes()));
    }

    #[test]
    fn random_bytes_after_a_header_are_an_error_or_a_valid_matrix(
        header in 0..VALID.len(),
        tail in proptest::collection::vec(proptest::sample::select(ALPHABET), 0..120),
    ) {
        let first = VALID[header].lines().next().unwrap();
        let mut bytes = format!("{first}\n").into_bytes();
        bytes.extend(tail);
        assert_valid(&read(&bytes));
    }

    #[test]
    fn mutated_and_truncated_files_are_an_error_or_a_valid_matrix(
        which in 0..VALID.len(),
        edits in proptest::collection::vec(edit(), 0..6),
        truncate in proptest::option::of(any::<usize>()),
    ) {
        assert_valid(&read(&apply(VALID[which], &edits, truncate)));
    }

    #[test]
    fn written_matrices_read_back_exactly(
        n in 1usize..6,
        values in proptest::collection::vec(-1e300f64..1e300, 36),
        coordinate in any::<bool>(),
    ) {
        let a: Vec<f64> = values[..n * n].to_vec();
        let text = if coordinate {
            let mut t = format!("%%MatrixMarket matrix coordinate real general\n{n} {n} {}\n", n * n);
            for (k, x) in a.iter().enumerate() {
                t += &format!("{} {} {x:e}\n", k % n + 1, k / n + 1);
            }
            t
        } else {
            let mut t = format!("%%MatrixMarket matrix array real general\n{n} {n}\n");
            for x in &a {
                t += &format!("{x:e}\n");
            }
            t
        };
        let file = MatrixFile::from_reader("prop", text.as_bytes()).unwrap();
        let expected = if coordinate { Format::Coordinate { entries: n * n } } else { Format::Array };
        prop_assert_eq!(file.format(), expected);
        prop_assert_eq!(read(text.as_bytes()).unwrap(), (n, a));
    }
}
