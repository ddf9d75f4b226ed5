//! `dps-lu --variant dynamic --alloc schedule --withdraw RANK@iteration:K` under mpirun: the
//! factorization with a rank withdrawn mid-run ends verified on 2, 3 and 4 ranks, the
//! iterations from K on run on the pre-computed schedule without the rank, and the makespan
//! of the withdrawal against all ranks and the reduced set from the start (three runs).

use dps_launch::json_record as json;
use dps_launch::mpirun;
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
