//! Tours in TSPLIB's `.tour` format, and their independent check.

use std::fmt::Write as _;

use crate::tsplib::Instance;

/// The tour as a TSPLIB `.tour` file (cities numbered from 1, ended by -1 and EOF).
pub fn to_tsplib(name: &str, length: i64, tour: &[usize]) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "NAME : {name}.tour");
    let _ = writeln!(s, "COMMENT : Length = {length} (dps-tsp)");
    let _ = writeln!(s, "TYPE : TOUR");
    let _ = writeln!(s, "DIMENSION : {}", tour.len());
    let _ = writeln!(s, "TOUR_SECTION");
    for c in tour {
        let _ = writeln!(s, "{}", c + 1);
    }
    s.push_str("-1\nEOF\n");
    s
}

/// Checks that `tour` visits every city of `inst` exactly once and has length `length`,
/// recomputing the length from the distances.
///
/// # Errors
/// A message saying what is wrong.
pub fn check(inst: &Instance, tour: &[usize], length: i64) -> Result<(), String> {
    if tour.len() != inst.n {
        return Err(format!("the tour has {} cities, the instance {}", tour.len(), inst.n));
    }
    let mut seen = vec![false; inst.n];
    for &c in tour {
        if c >= inst.n || std::mem::replace(&mut seen[c], true) {
            return Err(format!("city {} is visited twice or does not exist", c + 1));
        }
    }
    let Some(recomputed) = inst.checked_tour_length(tour) else {
        return Err("the tour's length overflows 64-bit integers".into());
    };
    if length < 0 || recomputed != length {
        return Err(format!("the tour's length is {recomputed}, not the {length} reported"));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writes_tsplib_tours_and_checks_them() {
        let text = to_tsplib("x", 10, &[0, 2, 1]);
        assert_eq!(text, "NAME : x.tour\nCOMMENT : Length = 10 (dps-tsp)\nTYPE : TOUR\nDIMENSION : 3\nTOUR_SECTION\n1\n3\n2\n-1\nEOF\n");
        let inst = Instance::random(4, 1);
        let len = inst.tour_length(&[0, 1, 2, 3]);
        assert!(check(&inst, &[0, 1, 2, 3], len).is_ok());
        assert!(check(&inst, &[0, 1, 2, 3], len + 1).unwrap_err().contains("not the"));
        assert!(check(&inst, &[0, 1, 1, 3], len).unwrap_err().contains("twice"));
        assert!(check(&inst, &[0, 1, 2], len).is_err());
        let big = Instance::unchecked_matrix(3, vec![0, i64::MAX, 1, i64::MAX, 0, 1, 1, 1, 0]);
        assert!(check(&big, &[0, 1, 2], i64::MIN + 1).unwrap_err().contains("overflows"));
    }
}
