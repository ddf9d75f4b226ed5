//! `dps-bench schedule` with bad graphs and options (exit 2, one line naming the node, line
//! or option), and with good ones (exit 0: the table, the lookahead set, the Gantt chart).

use std::path::Path;

use dps_launch::bad_input::{case, check_table};

const BIN: &str = env!("CARGO_BIN_EXE_dps-bench");

#[test]
fn bad_graphs_and_options_are_refused_with_exit_2() {
    let dir = tempfile::tempdir().unwrap();
    let write = |name: &str, text: &str| {
        let path = dir.path().join(name);
        std::fs::write(&path, text).unwrap();
        path.to_string_lossy().into_owned()
    };
    let two =
        "[[task]]\nname = \"a\"\ntau = [2.0, 1.0]\n\n[[task]]\nname = \"b\"\nwork = 3.0\nspeedup = \"amdahl:0.1\"\n";
    let good = write("good.toml", &format!("{two}\n[[edge]]\nfrom = \"a\"\nto = \"b\"\nbytes = 1e6\n"));
    let cyclic = write(
        "cyclic.toml",
        &format!("{two}\n[[edge]]\nfrom = \"a\"\nto = \"b\"\n\n[[edge]]\nfrom = \"b\"\nto = \"a\"\n"),
    );
    let zero = write("zero.toml", "[[task]]\nname = \"z\"\ntau = [0.0]\n");
    let nan = write("nan.toml", "[[task]]\nname = \"n\"\ntau = [nan, 1.0]\n");
    let inf = write("inf.toml", "[[task]]\nname = \"i\"\nwork = inf\n");
    let unknown = write("unknown.toml", "[[task]]\nname = \"a\"\ntau = [1.0]\ncolour = \"red\"\n");
    let missing = write("missing.toml", &format!("{two}\n[[edge]]\nfrom = \"a\"\nto = \"c\"\n"));
    let png = dir.path().join("gantt.png");
    let png = png.to_str().unwrap();
    let no_dir = dir.path().join("no/such/gantt.png");
    let no_dir = no_dir.to_str().unwrap();

    check_table(
        Path::new(BIN),
        &[
            case(&["schedule", &cyclic, "--procs", "2"], 2, &["cyclic.toml:", "cycle", "task"]),
            case(&["schedule", &zero, "--procs", "2"], 2, &["zero.toml:2", "\"z\"", "τ(1) = 0"]),
            case(&["schedule", &nan, "--procs", "2"], 2, &["nan.toml:2", "\"n\"", "NaN"]),
            case(&["schedule", &inf, "--procs", "2"], 2, &["inf.toml:2", "\"i\"", "inf"]),
            case(&["schedule", &unknown, "--procs", "2"], 2, &["unknown.toml:4", "colour"]),
            case(&["schedule", &missing, "--procs", "2"], 2, &["missing.toml:12", "\"c\"", "not defined"]),
            case(&["schedule", &good, "--procs", "0"], 2, &["--procs 0"]),
            case(&["schedule", &good], 2, &["--procs"]),
            case(&["schedule", "--procs", "2"], 2, &["FILE", "--lu"]),
            case(&["schedule", "/nonexistent/g.toml", "--procs", "2"], 2, &["/nonexistent/g.toml"]),
            case(&["schedule", &good, "--lu", "648", "--procs", "2"], 2, &["not both"]),
            case(&["schedule", "--lu", "1000", "--block", "324", "--procs", "8"], 2, &["--lu 1000", "multiple"]),
            case(&["schedule", &good, "--procs", "2", "--lookahead", "lose:2"], 2, &["lose all 2"]),
            case(&["schedule", &good, "--procs", "2", "--lookahead", "melt:1"], 2, &["--lookahead", "melt:1"]),
            case(&["schedule", &good, "--procs", "2", "--lookahead", "drop:x"], 2, &["drop:x", "no task"]),
            case(
                &["schedule", &good, "--procs", "2", "--platform", "/nonexistent/p.toml"],
                2,
                &["/nonexistent/p.toml"],
            ),
            case(&["schedule", &good, "--procs", "2", "--gantt", no_dir], 2, &["--gantt"]),
            case(&["schedule", &good, "--procs", "2", "--lookahead", "lose:1,gain:1,drop:b", "--gantt", png], 0, &[]),
            case(&["schedule", "--lu", "2592", "--block", "324", "--procs", "8"], 0, &[]),
        ],
    );
    assert!(std::fs::metadata(png).unwrap().len() > 0);
}

#[test]
fn the_report_has_the_analysis_and_the_comparison() {
    let out = std::process::Command::new(BIN)
        .args(["schedule", "--lu", "2592", "--block", "324", "--procs", "8", "--lookahead", "lose:1"])
        .output()
        .unwrap();
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    for word in ["TIME", "k 1", "µ", "bound", "TIME/LB", "CPA", "MCPA", "static", "lookahead", "lose:1", "switch (µs)"]
    {
        assert!(text.contains(word), "{word:?} missing from\n{text}");
    }
}
