//! The share of a core this process's CPU quota allows: a node of an emulated cluster
//! (`slurm/cluster.sh --cpu Q`: a cgroup v1 `cpu` quota) or a container's limit (cgroup v2
//! `cpu.max`). The calibration records it in the platform file, and the simulator gives each
//! virtual rank that share of one core.

use std::path::Path;

/// The quota over the period of the most limiting cgroup on this process's path, if one
/// limits it below a whole core; `None` when there is no quota or it allows a core or more.
pub fn share() -> Option<f64> {
    limit().filter(|&q| q < 1.0)
}

/// The quota over the period of the most limiting cgroup on this process's path, in cores
/// (1.5: one and a half cores); `None` when no cgroup sets a quota.
pub fn limit() -> Option<f64> {
    let cgroups = std::fs::read_to_string("/proc/self/cgroup").ok()?;
    let mut lowest: Option<f64> = None;
    for line in cgroups.lines() {
        let mut fields = line.splitn(3, ':');
        let (_, controllers, path) = (fields.next()?, fields.next()?, fields.next()?);
        let quota = if controllers.split(',').any(|c| c == "cpu") {
            lowest_along(Path::new("/sys/fs/cgroup/cpu"), path, v1_quota)
        } else if controllers.is_empty() {
            lowest_along(Path::new("/sys/fs/cgroup"), path, v2_quota)
        } else {
            None
        };
        if let Some(q) = quota {
            lowest = Some(lowest.map_or(q, |l: f64| l.min(q)));
        }
    }
    lowest
}

/// The lowest quota of the cgroup `path` under `root` and of its ancestors.
fn lowest_along(root: &Path, path: &str, quota: fn(&Path) -> Option<f64>) -> Option<f64> {
    let mut dir = root.join(path.trim_start_matches('/'));
    let mut lowest: Option<f64> = None;
    while dir.starts_with(root) {
        if let Some(q) = quota(&dir) {
            lowest = Some(lowest.map_or(q, |l| l.min(q)));
        }
        if !dir.pop() {
            break;
        }
    }
    lowest
}

/// cgroup v1: `cpu.cfs_quota_us / cpu.cfs_period_us` (a quota of -1: none).
fn v1_quota(dir: &Path) -> Option<f64> {
    let read = |name: &str| std::fs::read_to_string(dir.join(name)).ok()?.trim().parse::<f64>().ok();
    let (quota, period) = (read("cpu.cfs_quota_us")?, read("cpu.cfs_period_us")?);
    (quota > 0.0 && period > 0.0).then(|| quota / period)
}

/// cgroup v2: `cpu.max`, `QUOTA PERIOD` (`max PERIOD`: none).
fn v2_quota(dir: &Path) -> Option<f64> {
    let text = std::fs::read_to_string(dir.join("cpu.max")).ok()?;
    let mut words = text.split_whitespace();
    let (quota, period) = (words.next()?.parse::<f64>().ok()?, words.next()?.parse::<f64>().ok()?);
    (quota > 0.0 && period > 0.0).then(|| quota / period)
}
