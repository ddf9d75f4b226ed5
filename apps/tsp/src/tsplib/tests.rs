//! Tests of the TSPLIB parser: each format and metric, the documented errors, and the tour writer.

use super::*;

fn err_of(text: &str) -> ParseError {
    parse(text, "t").expect_err("the text must be rejected")
}

#[test]
fn reads_coordinates_and_ignores_display_metadata() {
    let text = "NAME : tiny\nTYPE : TSP\nDIMENSION : 3\nEDGE_WEIGHT_TYPE : EUC_2D\nNODE_COORD_SECTION\n1 0 0\n2 3 4\n3 0 4\nEOF\n";
    let inst = parse(text, "x").unwrap();
    assert_eq!((inst.name.as_str(), inst.n), ("tiny", 3));
    assert_eq!((inst.d(0, 1), inst.d(1, 2), inst.d(0, 2)), (5, 3, 4));
}

#[test]
fn explicit_formats_give_the_same_matrix() {
    // d(1,2) = 1, d(1,3) = 2, d(1,4) = 3, d(2,3) = 4, d(2,4) = 5, d(3,4) = 6.
    let bodies = [
        ("FULL_MATRIX", "0 1 2 3\n1 0 4 5\n2 4 0 6\n3 5 6 0"),
        ("UPPER_ROW", "1 2 3\n4 5\n6"),
        ("LOWER_ROW", "1\n2 4\n3 5 6"),
        ("UPPER_DIAG_ROW", "0 1 2 3 0 4 5 0 6 0"),
        ("LOWER_DIAG_ROW", "0\n1 0\n2 4 0\n3 5 6 0"),
    ];
    for (format, body) in bodies {
        let text = format!(
            "NAME: m\nTYPE: TSP\nDIMENSION: 4\nEDGE_WEIGHT_TYPE: EXPLICIT\nEDGE_WEIGHT_FORMAT: {format}\nEDGE_WEIGHT_SECTION\n{body}\nEOF\n"
        );
        let inst = parse(&text, "m").unwrap_or_else(|e| panic!("{format}: {e}"));
        let expect = [0, 1, 2, 3, 1, 0, 4, 5, 2, 4, 0, 6, 3, 5, 6, 0];
        assert_eq!(inst.matrix(), &expect, "{format}");
    }
}

#[test]
fn the_shipped_instances_parse_with_their_sizes() {
    let dir = std::path::Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/data"));
    for (name, n) in [("burma14", 14), ("gr17", 17), ("bayg29", 29), ("bays29", 29), ("att48", 48), ("eil51", 51)] {
        let inst = read(&dir.join(format!("{name}.tsp"))).unwrap();
        assert_eq!((inst.name.as_str(), inst.n), (name, n));
    }
    let bays = read(&dir.join("bays29.tsp")).unwrap();
    assert_eq!((bays.d(0, 1), bays.d(1, 0), bays.d(0, 2)), (107, 107, 241));
    assert!(bays.coords.is_some(), "DISPLAY_DATA_SECTION gives coordinates for plots");
}

#[test]
fn errors_name_the_line() {
    let head = "NAME: e\nTYPE: TSP\nDIMENSION: 3\n";
    let e = err_of(&format!("{head}EDGE_WEIGHT_TYPE: EUC_3D\n"));
    assert_eq!(e.line, 4);
    assert!(e.message.contains("EDGE_WEIGHT_TYPE EUC_3D is not supported"), "{e}");

    let e = err_of("NAME: e\nTYPE: ATSP\n");
    assert_eq!(e.line, 2);
    assert!(e.message.contains("TYPE ATSP is not supported"), "{e}");

    let e = err_of(&format!("{head}EDGE_WEIGHT_TYPE: EUC_2D\nNODE_COORD_SECTION\n1 0 0\n2 1 x\n3 2 2\nEOF\n"));
    assert_eq!((e.line, e.message.as_str()), (7, "coordinate \"x\" is not a number"));

    let e = err_of(&format!("{head}EDGE_WEIGHT_TYPE: EUC_2D\nNODE_COORD_SECTION\n1 0 0\n2 1 1\nEOF\n"));
    assert_eq!(e.line, 8, "the line where the third city was expected");
    assert!(e.message.contains("ends after 2 of DIMENSION 3 cities"), "{e}");

    let e = err_of(&format!("{head}EDGE_WEIGHT_TYPE: EUC_2D\nNODE_COORD_SECTION\n1 0 0\n2 1 1\n3 2 2\n4 3 3\nEOF\n"));
    assert_eq!(e.line, 9);
    assert!(e.message.contains("more than DIMENSION 3"), "{e}");

    let e = err_of(&format!("{head}EDGE_WEIGHT_TYPE: EUC_2D\nNODE_COORD_SECTION\n1 0 0\n5 1 1\n3 2 2\n"));
    assert_eq!(e.line, 7);
    assert!(e.message.contains("city index 5 is outside 1..=3"), "{e}");

    let explicit = format!("{head}EDGE_WEIGHT_TYPE: EXPLICIT\nEDGE_WEIGHT_FORMAT: UPPER_ROW\nEDGE_WEIGHT_SECTION\n");
    let e = err_of(&format!("{explicit}1 2\nEOF\n"));
    assert_eq!(e.line, 7);
    assert!(e.message.contains("has 2 weights; DIMENSION 3 needs 3"), "{e}");
    let e = err_of(&format!("{explicit}1 2\n3 4\nEOF\n"));
    assert_eq!(e.line, 8);
    assert!(e.message.contains("more than the 3 weights"), "{e}");

    let e = err_of("NAME: e\nTYPE: TSP\nEDGE_WEIGHT_TYPE: EUC_2D\nNODE_COORD_SECTION\n1 0 0\n");
    assert_eq!((e.line, e.message.as_str()), (4, "NODE_COORD_SECTION before DIMENSION"));

    let e = err_of("NAME: e\nTYPE: TSP\nDIMENSION: three\n");
    assert_eq!(e.line, 3);

    let e = err_of("NAME: e\nFOO: bar\n");
    assert_eq!((e.line, e.message.as_str()), (2, "unknown keyword \"FOO\""));
}

#[test]
fn error_display_names_file_and_line() {
    let e = ParseError { file: "a.tsp".into(), line: 4, message: "bad".into() };
    assert_eq!(e.to_string(), "a.tsp: line 4: bad");
}

fn coords_file(points: &[(&str, &str)]) -> String {
    let mut text =
        format!("NAME: c\nTYPE: TSP\nDIMENSION: {}\nEDGE_WEIGHT_TYPE: EUC_2D\nNODE_COORD_SECTION\n", points.len());
    for (k, (x, y)) in points.iter().enumerate() {
        text.push_str(&format!("{} {x} {y}\n", k + 1));
    }
    text + "EOF\n"
}

#[test]
fn non_finite_coordinates_are_refused_on_their_line() {
    for bad in ["inf", "-inf", "nan", "NaN", "infinity", "1e400"] {
        let e = err_of(&coords_file(&[("0", "0"), (bad, "1"), ("2", "2")]));
        assert_eq!(e.line, 7, "{bad}: {e}");
        assert!(e.message.contains("not a finite number"), "{bad}: {e}");
    }
}

/// Huge finite coordinates used to saturate a distance to i64::MAX and wrap the tour sum
/// into a small "proven optimal" length.
#[test]
fn distances_beyond_the_weight_bound_are_refused_naming_the_cities() {
    let e = err_of(&coords_file(&[("0", "0"), ("1e300", "0"), ("2", "2")]));
    assert!(e.message.contains("not a finite number below 2^63"), "{e}");
    assert!(e.message.contains("between cities 2 (line 7) and 1 (line 6)"), "{e}");
    assert!(e.message.contains("scale the instance down"), "{e}");
    // Finite and representable, but n * weight > 2^53.
    let e = err_of(&coords_file(&[("0", "0"), ("4e15", "0"), ("1", "0")]));
    assert!(e.message.contains(&format!("at most {} is allowed", weight_limit(3))), "{e}");
    // Just within the bound is accepted.
    let limit = weight_limit(3).to_string();
    let inst = parse(&coords_file(&[("0", "0"), (&limit, "0"), ("0", "1")]), "t").unwrap();
    assert_eq!(inst.d(0, 1), weight_limit(3));
}

#[test]
fn explicit_weights_beyond_the_bound_are_refused_naming_the_largest() {
    let head = "NAME: w\nTYPE: TSP\nDIMENSION: 3\nEDGE_WEIGHT_TYPE: EXPLICIT\nEDGE_WEIGHT_FORMAT: UPPER_ROW\nEDGE_WEIGHT_SECTION\n";
    let e = err_of(&format!("{head}4611686018427387904 1\n9223372036854775000\nEOF\n"));
    assert_eq!(e.line, 8, "the line of the largest weight: {e}");
    assert!(e.message.contains("largest edge weight, 9223372036854775000 (cities 2 and 3)"), "{e}");
    assert!(e.message.contains(&weight_limit(3).to_string()), "{e}");
    let e = err_of(&format!("{head}1 1e300\n2\nEOF\n"));
    assert!(e.message.contains("largest edge weight, at least 2^63 (cities 1 and 3)"), "{e}");
    for bad in ["inf", "nan", "-3", "1.5"] {
        let e = err_of(&format!("{head}1 {bad}\n2\nEOF\n"));
        assert_eq!(e.line, 7, "{bad}: {e}");
    }
    // The diagonal of a DIAG format is not a distance: it does not count.
    let diag = "NAME: d\nTYPE: TSP\nDIMENSION: 3\nEDGE_WEIGHT_TYPE: EXPLICIT\nEDGE_WEIGHT_FORMAT: UPPER_DIAG_ROW\nEDGE_WEIGHT_SECTION\n";
    let inst = parse(&format!("{diag}9007199254740992 1 2 9007199254740992 3 0\nEOF\n"), "d").unwrap();
    assert_eq!(inst.matrix(), &[0, 1, 2, 1, 0, 3, 2, 3, 0]);
}

#[test]
fn dimension_is_checked_before_anything_of_its_size_is_allocated() {
    let e = err_of("NAME: d\nTYPE: TSP\nDIMENSION: 3\nDIMENSION: 4\n");
    assert_eq!((e.line, e.message.as_str()), (4, "DIMENSION given twice (first on line 3)"));
    for n in [0, 1, 2] {
        let e = err_of(&format!("DIMENSION: {n}\n"));
        assert!(e.message.contains("at least 3 cities"), "{e}");
    }
    let e = parse_with("DIMENSION: 65536\n", "t", &|_| Ok(())).unwrap_err();
    assert!(e.message.contains("at most 65535 cities"), "{e}");
    let e = err_of("DIMENSION: 1e14\n");
    assert!(e.message.contains("not a whole number"), "{e}");
    // The caller's check runs at the DIMENSION line and its message is kept.
    let refuse = |n: usize| -> anyhow::Result<()> { anyhow::bail!("DIMENSION {n} is too big for this test") };
    let e = parse_with("NAME: x\nDIMENSION: 200000\nEDGE_WEIGHT_TYPE: EXPLICIT\n", "x", &refuse).unwrap_err();
    assert_eq!((e.line, e.message.as_str()), (2, "DIMENSION 200000 is too big for this test"));
    // The default check is this node's memory: 10^14 cities need more than it has.
    let e = err_of("DIMENSION: 100000000000000\n");
    assert!(e.message.contains("needs more than 16 EiB"), "{e}");
    // A tiny file with a large DIMENSION and few weights is refused by the count, not
    // after allocating DIMENSION² cells.
    let tiny =
        "DIMENSION: 60000\nEDGE_WEIGHT_TYPE: EXPLICIT\nEDGE_WEIGHT_FORMAT: FULL_MATRIX\nEDGE_WEIGHT_SECTION\n1 2 3\n";
    let e = parse_with(tiny, "t", &|_| Ok(())).unwrap_err();
    assert!(e.message.contains("has 3 weights; DIMENSION 60000 needs 3600000000"), "{e}");
}

#[test]
fn writes_tsplib_tours() {
    let text = to_tour_file("x", 10, &[0, 2, 1]);
    assert_eq!(
        text,
        "NAME : x.tour\nCOMMENT : Length = 10 (dps-tsp)\nTYPE : TOUR\nDIMENSION : 3\nTOUR_SECTION\n1\n3\n2\n-1\nEOF\n"
    );
}
