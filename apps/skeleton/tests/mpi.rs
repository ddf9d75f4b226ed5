//! `dps-skeleton` under mpirun: the skeleton is bit-identical to the serial reference (and
//! to every other run) whatever the ranks (1 to 4), the variant and the migrations forced
//! between rounds; the migration policy moves cells off the loaded rank of the skewed image.

use std::path::PathBuf;

use dps_launch::json_record as json;
use dps_launch::mpirun;

const BIN: &str = env!("CARGO_BIN_EXE_dps-skeleton");

fn temp(name: &str) -> PathBuf {
    std::env::temp_dir().join(format!("dps-skeleton-{}-{name}", std::process::id()))
}

/// Runs one job; returns its record and the skeleton's PNG bytes.
fn skeleton(ranks: usize, args: &[&str], name: &str) -> (serde_json::Value, Vec<u8>) {
    let out = temp(name);
    let mut all = args.to_vec();
    all.extend(["--verify", "--json", "--out", out.to_str().unwrap()]);
    let job = mpirun(ranks, BIN.as_ref(), &all);
    assert!(job.status.success(), "{ranks} ranks {args:?}: {}\n{}", job.stdout, job.stderr);
    let record = json(&job.stdout);
    assert_eq!(record["verified"], true, "{ranks} ranks {args:?}: {record}");
    assert_eq!(record["ranks"], ranks);
    let png = std::fs::read(&out).unwrap();
    let _ = std::fs::remove_file(&out);
    (record, png)
}

#[test]
fn every_rank_count_and_forced_migrations_give_the_same_skeleton() {
    let image = ["--generate", "mixed", "300", "200", "--seed", "5", "--cell", "32", "--depth", "3"];
    let (serial, png) = skeleton(1, &[&image[..], &["--variant", "static"]].concat(), "static-1.png");
    assert_eq!(serial["migrations"], 0);
    for ranks in [1, 2, 3, 4] {
        let args = [&image[..], &["--variant", "migrate", "--force-migrations", "5"]].concat();
        let (record, out) = skeleton(ranks, &args, &format!("forced-{ranks}.png"));
        assert_eq!(out, png, "{ranks} ranks with forced migrations: another skeleton");
        assert_eq!(record["iterations"], serial["iterations"]);
        if ranks > 1 {
            assert!(record["migrations"].as_u64().unwrap() > 0, "{ranks} ranks: no cell moved: {record}");
        }
    }
}

#[test]
fn the_policy_moves_cells_off_the_loaded_rank_of_the_skewed_image() {
    let image = ["--generate", "skewed", "512", "256", "--seed", "2", "--cell", "32", "--depth", "4"];
    let (fixed, png) = skeleton(2, &[&image[..], &["--variant", "static"]].concat(), "skewed-static.png");
    let (moving, out) = skeleton(2, &[&image[..], &["--variant", "migrate"]].concat(), "skewed-migrate.png");
    assert_eq!(out, png);
    assert_eq!(fixed["migrations"], 0);
    // Under eq. (8-2) every cell with work is on rank 0: the policy gives rank 1 some.
    assert!(moving["migrations"].as_u64().unwrap() > 0, "{moving}");
    // Depth 1 (the thesis's exchange per pass) and text, every cell of a rank at once.
    let text = ["--generate", "text", "200", "120", "--cell", "16", "--depth", "1", "--in-flight", "100"];
    skeleton(3, &[&text[..], &["--variant", "migrate"]].concat(), "text.png");
}
