//! Tests of the TSPLIB parser: each format and metric, and the documented errors.

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
        let inst = Instance::read(&dir.join(format!("{name}.tsp"))).unwrap();
        assert_eq!((inst.name.as_str(), inst.n), (name, n));
    }
    let bays = Instance::read(&dir.join("bays29.tsp")).unwrap();
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
