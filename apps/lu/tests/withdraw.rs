//! `dps-lu --variant dynamic --alloc schedule --withdraw RANK@iteration:K` under mpirun: the
//! factorization with a rank withdrawn mid-run ends verified on 2, 3 and 4 ranks, the
//! iterations from K on run on the pre-computed schedule without the rank, a rank holding
//! column blocks sees its column thread moved to a rank that stays (also under the
//! simulator), and the makespan of the withdrawal against all ranks and the reduced set
//! from the start (three runs).

use dps_launch::json_record as json;
use dps_launch::mpirun;
use dps_launch::{Job, Launcher};
use serde_json::Value;

const BIN: &str = env!("CARGO_BIN_EXE_dps-lu");

/// A verified dynamic run under `--alloc schedule` with `extra` options: the record.
fn scheduled(ranks: usize, n: &str, block: &str, map: &str, extra: &[&str]) -> Value {
    let args = ["--variant", "dynamic", "--n", n, "--block", block, "--map", map, "--alloc", "schedule"];
    let args = [&args[..], extra, &["--verify", "--json"]].concat();
    let job = mpirun(ranks, BIN.as_ref(), &args);
    assert!(job.status.success(), "{ranks} ranks {args:?}: {}", job.stderr);
    let r = json(&job.stdout);
    assert_eq!((&r["verified"], &r["pivots_match"], &r["alloc"]), (&true.into(), &true.into(), &"schedule".into()));
    assert!(r["residual"].as_f64().unwrap() < 16.0, "{r}");
    r
}

/// The ranks of each iteration in the record's schedule.
fn chosen(r: &Value) -> Vec<Vec<u64>> {
    r["schedule"]["iterations"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["ranks"].as_array().unwrap().iter().map(|q| q.as_u64().unwrap()).collect())
        .collect()
}

#[test]
fn a_rank_withdrawn_mid_run_ends_verified_on_2_3_4_ranks() {
    // n = 96 in blocks of 16: 6 iterations, 25 multiplications in the first. The last rank
    // holds no column block; on 4 ranks two threads per rank.
    for (ranks, map) in [(2usize, "all"), (3, "all"), (4, "all*2")] {
        let rank = ranks as u64 - 1;
        let w = format!("{rank}@iteration:3");
        let r = scheduled(ranks, "96", "16", map, &["--withdraw", &w, "--per-iteration"]);
        let s = &r["schedule"];
        assert_eq!((&s["withdrawn_rank"], &s["withdrawn_at"]), (&rank.into(), &3.into()), "{r}");
        let switch = s["switch_s"].as_f64().unwrap();
        assert!(switch > 0.0 && switch < 0.1, "the switch is a lookup: {switch} s");
        let per = chosen(&r);
        assert_eq!(per.len(), 6, "{r}");
        assert!(per[0].contains(&rank), "{ranks} ranks: iteration 1 uses every rank: {per:?}");
        assert!(per[2..].iter().all(|q| !q.contains(&rank) && !q.is_empty()), "{ranks} ranks: {per:?}");
        // --per-iteration counts the same ranks.
        let held: Vec<u64> = r["iterations"].as_array().unwrap().iter().map(|i| i["ranks"].as_u64().unwrap()).collect();
        assert_eq!(held, per.iter().map(|q| q.len() as u64).collect::<Vec<_>>(), "{r}");
        let (all, reduced, withdrawn) = (
            s["predicted_all_s"].as_f64().unwrap(),
            s["predicted_reduced_s"].as_f64().unwrap(),
            s["predicted_withdrawn_s"].as_f64().unwrap(),
        );
        // Without a platform file redistribution is free and more ranks never slow the
        // model down; with one ($DPS_PLATFORM) its phases cost more on more ranks.
        assert!([all, reduced, withdrawn].iter().all(|t| t.is_finite() && *t > 0.0), "{s}");
    }
}

/// The column moves of a record: (thread, from, to, blocks).
fn moves(r: &Value) -> Vec<[u64; 4]> {
    let Some(moves) = r["schedule"]["column_moves"].as_array() else { return Vec::new() };
    moves.iter().map(|m| ["thread", "from", "to", "blocks"].map(|k| m[k].as_u64().unwrap())).collect()
}

#[test]
fn a_rank_holding_column_blocks_is_withdrawn_and_its_column_thread_moves() {
    // n = 96 in blocks of 16: 6 blocks, block j on column thread (= rank) j % C. On 2 ranks
    // rank 1 leaves everything to rank 0; on 3 (columns on all) rank 2's thread goes to the
    // rank with fewer blocks left; on 4 (columns on ranks 0, 1 by default) rank 1's goes to
    // rank 2, which held none. Two timed factorizations: each starts on all ranks again.
    let runs: [(usize, &str, &[&str], [u64; 4]); 4] = [
        (2, "all", &["--column-ranks", "2", "--withdraw", "1@iteration:2"], [1, 1, 0, 3]),
        (3, "all", &["--column-ranks", "3", "--withdraw", "2@iteration:5"], [2, 2, 0, 2]),
        (3, "all", &["--column-ranks", "3", "--withdraw", "1@iteration:1"], [1, 1, 2, 2]),
        (4, "all*2", &["--withdraw", "1@iteration:3"], [1, 1, 2, 3]),
    ];
    for (ranks, map, extra, moved) in runs {
        let r = scheduled(ranks, "96", "16", map, &[extra, &["--reps", "2", "--per-iteration"]].concat());
        assert_eq!(moves(&r), [moved], "{ranks} ranks {extra:?}: {r}");
        let s = &r["schedule"];
        let (w, k) = (moved[1], s["withdrawn_at"].as_u64().unwrap() as usize);
        let move_s = s["move_s"].as_f64().unwrap();
        assert!(move_s > 0.0 && move_s < 10.0, "{ranks} ranks: the move took {move_s} s");
        assert!(s["predicted_move_s"].as_f64().unwrap() >= 0.0, "{s}");
        let per = chosen(&r);
        assert!(per[k - 1..].iter().all(|q| !q.contains(&w) && !q.is_empty()), "{ranks} ranks: {per:?}");
        assert!(r["iterations"].as_array().unwrap().len() == 6, "{r}");
    }
    // A rank without column blocks moves nothing.
    let r = scheduled(4, "96", "16", "all", &["--withdraw", "3@iteration:2"]);
    assert!(moves(&r).is_empty() && r["schedule"]["move_s"].is_null(), "{r}");
}

#[test]
fn a_simulated_withdrawal_moves_the_column_thread_in_simulated_time() {
    let dir = tempfile::tempdir().unwrap();
    let platform = dps_harness::simulate::made_up_platform_file(dir.path());
    let args = [
        "--variant",
        "dynamic",
        "--n",
        "96",
        "--block",
        "16",
        "--simulate",
        "4",
        "--withdraw",
        "1@iteration:3",
        "--reps",
        "2",
        "--verify",
        "--json",
        "--platform",
    ];
    let job = Job::new(BIN).launcher(Launcher::None).args(args).arg(&platform).timeout_s(120).output().unwrap();
    assert!(job.status.success(), "{args:?}: {}", job.stderr);
    let r = json(&job.stdout);
    assert_eq!(r["verified"], true, "{r}");
    assert_eq!(moves(&r), [[1, 1, 2, 3]], "{r}");
    let s = &r["schedule"];
    // The platform file's link: l + bytes/b for 3 blocks of 96 × 16 doubles, in the model
    // and (with the messages of the move protocol) in the simulated clock.
    let (moved, predicted) = (s["move_s"].as_f64().unwrap(), s["predicted_move_s"].as_f64().unwrap());
    assert!(predicted > 0.0 && moved > 0.0, "{s}");
    let (all, withdrawn) = (s["predicted_all_s"].as_f64().unwrap(), s["predicted_withdrawn_s"].as_f64().unwrap());
    assert!(withdrawn.is_finite() && withdrawn > 0.0 && all > 0.0, "{s}");
}

/// Three runs on 3 ranks, 3 timed factorizations each: all ranks, rank 2 withdrawn at
/// iteration 4, and rank 2 withdrawn at iteration 1 (the reduced set from the start). The
/// measured makespans are printed (this machine is shared: they are not asserted), beside
/// the model's.
#[test]
fn the_makespan_against_all_ranks_and_the_reduced_set_from_the_start() {
    let runs = [
        ("all ranks", vec![]),
        ("rank 2 withdrawn at iteration 4", vec!["--withdraw", "2@iteration:4"]),
        ("rank 2 withdrawn from the start", vec!["--withdraw", "2@iteration:1"]),
    ];
    let mut rows = Vec::new();
    for (what, extra) in &runs {
        let r = scheduled(3, "768", "96", "all", &[&extra[..], &["--reps", "3"]].concat());
        let measured = r["seconds"].as_f64().unwrap();
        let s = &r["schedule"];
        let model = s["predicted_withdrawn_s"].as_f64().or(s["predicted_all_s"].as_f64()).unwrap();
        rows.push((what, measured, model, chosen(&r)));
    }
    eprintln!("| run | measured (s) | model (s) | ranks per iteration |\n| --- | ---: | ---: | --- |");
    for (what, measured, model, per) in &rows {
        eprintln!("| {what} | {measured:.4} | {model:.4} | {per:?} |");
        assert!(*measured > 0.0 && *model > 0.0);
    }
    assert!(rows[1].3[..3].iter().all(|q| q.contains(&2)), "all ranks up to iteration 4: {:?}", rows[1].3);
    assert!(rows[1].3[3..].iter().all(|q| !q.contains(&2)), "withdrawn at iteration 4: {:?}", rows[1].3);
    assert!(rows[2].3.iter().all(|q| !q.contains(&2)), "withdrawn from the start: {:?}", rows[2].3);
}
