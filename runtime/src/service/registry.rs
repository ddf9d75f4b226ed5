//! The service registry: a directory (`DPS_SERVICES`) where each exported service has one
//! small JSON file, `NAME.service`, naming its addresses, types and owner. The file appears
//! whole (written aside, then linked in place without clobbering) and is removed when the
//! service is withdrawn; a killed service leaves it behind, which clients detect because
//! nobody answers at its addresses.

use std::io::Write;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use crate::error::{Error, ErrorKind};

/// The environment variable that names the registry directory.
pub(super) const ENV: &str = "DPS_SERVICES";

/// The version of the protocol between a client and a service (`service::frame`).
pub(super) const PROTOCOL: u32 = 2;

/// What the registry says about one exported service.
#[derive(Serialize, Deserialize, Clone, Debug)]
pub(crate) struct Entry {
    pub(super) name: String,
    pub(super) protocol: u32,
    /// The serving process (rank 0 of its job) and its host, for messages.
    pub(super) pid: u32,
    pub(super) host: String,
    /// Tells this export from a later one under the same name (withdrawal removes only its own).
    pub(super) nonce: u64,
    /// The exported graph's name and fingerprint (`Graph::fingerprint`).
    pub(super) graph: String,
    pub(super) fingerprint: String,
    /// The request and reply types, as `std::any::type_name` spells them.
    pub(super) request: String,
    pub(super) reply: String,
    /// An abstract Unix socket (same node, same network namespace).
    pub(super) unix: Option<String>,
    /// TCP addresses, `ip:port`, the host's own first and loopback last.
    pub(super) tcp: Vec<String>,
}

/// A registry directory.
#[derive(Clone, Debug)]
pub(crate) struct Registry {
    dir: PathBuf,
}

/// A service name: letters, digits, `.`, `_` and `-`, not starting with a dot, at most 100.
pub(crate) fn check_name(name: &str) -> Result<(), Error> {
    let ok_char = |c: char| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-');
    if name.is_empty() || name.len() > 100 || name.starts_with('.') || !name.chars().all(ok_char) {
        return Err(Error::new(
            ErrorKind::Usage,
            format!("service name \"{name}\": use 1 to 100 letters, digits, '.', '_' or '-', not starting with '.'"),
        ));
    }
    Ok(())
}

impl Registry {
    /// The directory `DPS_SERVICES` names (it must exist), or by default
    /// `$TMPDIR/dps-services-UID`, created if missing (private to the user).
    pub(crate) fn from_env() -> Result<Registry, Error> {
        match std::env::var_os(ENV) {
            Some(dir) if !dir.is_empty() => Registry::at(PathBuf::from(dir)),
            _ => {
                use std::os::unix::fs::{DirBuilderExt, MetadataExt};
                let uid = std::fs::metadata("/proc/self").map_or(0, |m| m.uid());
                let dir = std::env::temp_dir().join(format!("dps-services-{uid}"));
                let _ = std::fs::DirBuilder::new().mode(0o700).create(&dir);
                Registry::at(dir)
            }
        }
    }

    /// The registry in `dir`, which must be a directory.
    pub(super) fn at(dir: PathBuf) -> Result<Registry, Error> {
        match std::fs::metadata(&dir) {
            Ok(m) if m.is_dir() => Ok(Registry { dir }),
            Ok(_) => Err(io_error(format!("service registry {} ({ENV}) is not a directory", dir.display()))),
            Err(e) => Err(io_error(format!("service registry {} ({ENV}): {e}", dir.display()))),
        }
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.join(format!("{name}.service"))
    }

    /// The entry of service `name`.
    pub(crate) fn read(&self, name: &str) -> Result<Entry, Error> {
        let path = self.path(name);
        let text = std::fs::read_to_string(&path).map_err(|e| match e.kind() {
            std::io::ErrorKind::NotFound => not_running(name, &format!("nobody exports it (no {})", path.display())),
            _ => io_error(format!("service \"{name}\": cannot read {}: {e}", path.display())),
        })?;
        serde_json::from_str(&text).map_err(|e| {
            Error::new(
                ErrorKind::Service,
                format!("service \"{name}\": {} is not a service entry: {e}", path.display()),
            )
        })
    }

    /// Publishes `entry`. If another entry has the name, `is_live` decides: a live one is
    /// refused, a stale one (its service was killed) replaced.
    pub(super) fn publish(&self, entry: &Entry, is_live: impl Fn(&Entry) -> bool) -> Result<(), Error> {
        let path = self.path(&entry.name);
        let unwritable = |e: std::io::Error| {
            io_error(format!("service registry {} ({ENV}) is not writable: {e}", self.dir.display()))
        };
        let mut file = tempfile::NamedTempFile::new_in(&self.dir).map_err(unwritable)?;
        let text = serde_json::to_string_pretty(entry).expect("dps: a service entry encodes");
        file.write_all(text.as_bytes()).and_then(|()| file.flush()).map_err(unwritable)?;
        // Two tries: the second after removing a stale entry. Linking without clobbering
        // makes two exporters racing for a name see exactly one winner.
        for _ in 0..2 {
            match file.persist_noclobber(&path) {
                Ok(_) => return Ok(()),
                Err(e) if e.error.kind() == std::io::ErrorKind::AlreadyExists => {
                    file = e.file;
                    match self.read(&entry.name) {
                        Ok(old) if is_live(&old) => {
                            return Err(Error::new(
                                ErrorKind::Service,
                                format!(
                                    "service \"{}\" is already exported by pid {} on {} (graph \"{}\"); withdraw it or choose another name",
                                    old.name, old.pid, old.host, old.graph
                                ),
                            ))
                        }
                        // Stale or unreadable: it is nobody's.
                        _ => {
                            let _ = std::fs::remove_file(&path);
                        }
                    }
                }
                Err(e) => return Err(unwritable(e.error)),
            }
        }
        Err(Error::new(
            ErrorKind::Service,
            format!("service \"{}\": another exporter took the name meanwhile", entry.name),
        ))
    }

    /// Removes the entry of `name` if it is still the one with `nonce`.
    pub(super) fn withdraw(&self, name: &str, nonce: u64) {
        if self.read(name).is_ok_and(|e| e.nonce == nonce) {
            let _ = std::fs::remove_file(self.path(name));
        }
    }
}

/// A type name without its module paths: `alloc::vec::Vec<app::Range>` is `Vec<Range>`.
/// A client and a service are two programs that compile the same type each in its own
/// crate, so their full names differ where the types agree.
pub(super) fn short_type(name: &str) -> String {
    let mut out = String::with_capacity(name.len());
    let mut word = String::new();
    let is_path = |c: char| c.is_alphanumeric() || c == '_' || c == ':';
    for c in name.chars().chain(std::iter::once(' ')) {
        if is_path(c) {
            word.push(c);
            continue;
        }
        out.push_str(word.rsplit("::").next().unwrap_or(""));
        word.clear();
        out.push(c);
    }
    out.pop();
    out
}

fn io_error(message: String) -> Error {
    Error::new(ErrorKind::Io, message)
}

/// The error of a service that is not running, with `why`.
pub(super) fn not_running(name: &str, why: &str) -> Error {
    Error::new(ErrorKind::Service, format!("service \"{name}\" is not running: {why}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(name: &str, nonce: u64) -> Entry {
        Entry {
            name: name.into(),
            protocol: PROTOCOL,
            pid: 1,
            host: "h".into(),
            nonce,
            graph: "g".into(),
            fingerprint: "0".into(),
            request: "u64".into(),
            reply: "u64".into(),
            unix: None,
            tcp: Vec::new(),
        }
    }

    #[test]
    fn publish_refuses_a_live_name_replaces_a_stale_one_and_withdraws_only_its_own() {
        let dir = tempfile::tempdir().unwrap();
        let reg = Registry::at(dir.path().to_path_buf()).unwrap();
        reg.publish(&entry("a", 1), |_| true).unwrap();
        let refused = reg.publish(&entry("a", 2), |_| true).unwrap_err();
        assert!(refused.to_string().contains("already exported by pid 1"), "{refused}");
        reg.publish(&entry("a", 3), |_| false).unwrap();
        assert_eq!(reg.read("a").unwrap().nonce, 3);
        reg.withdraw("a", 1);
        assert_eq!(reg.read("a").unwrap().nonce, 3, "an older export does not withdraw a newer one");
        reg.withdraw("a", 3);
        assert!(reg.read("a").unwrap_err().to_string().contains("service \"a\" is not running: nobody exports it"));
    }

    #[test]
    fn type_names_are_compared_without_their_paths() {
        assert_eq!(short_type("alloc::vec::Vec<app::x::Range>"), "Vec<Range>");
        assert_eq!(short_type("(u64, dps::token::Bulk<f64>)"), "(u64, Bulk<f64>)");
        assert_eq!(short_type("u32"), "u32");
    }

    #[test]
    fn names_and_directories_are_checked() {
        for bad in ["", ".hidden", "a/b", "a b", &"x".repeat(101)] {
            assert!(check_name(bad).is_err(), "{bad:?}");
        }
        check_name("life.region-2_x").unwrap();
        let missing = Registry::at("/nonexistent/dps".into()).unwrap_err();
        assert!(missing.to_string().contains("service registry /nonexistent/dps (DPS_SERVICES)"), "{missing}");
        let unwritable = Registry::at("/proc".into()).unwrap().publish(&entry("a", 1), |_| true).unwrap_err();
        assert!(unwritable.to_string().contains("is not writable"), "{unwritable}");
    }
}
