//! Jobs that run in the background, several at once (a service and its clients), each
//! writing its outputs to files: [`Job::output`] runs one job at a time and holds the outputs
//! in pipes that a long-running job could fill.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};

use crate::Job;

/// A job started by [`Job::spawn_logged`]: its process, and the files of its outputs.
#[derive(Debug)]
pub struct Background {
    child: Child,
    out: PathBuf,
    err: PathBuf,
}

impl Job {
    /// Starts the job in the background, its standard output and error in `DIR/LABEL.out`
    /// and `DIR/LABEL.err`; its timeout still bounds it.
    ///
    /// # Panics
    /// If the files cannot be created or the command cannot be started (it is for tests).
    pub fn spawn_logged(&self, dir: &Path, label: &str) -> Background {
        let (out, err) = (dir.join(format!("{label}.out")), dir.join(format!("{label}.err")));
        let words = self.command_line();
        let child = Command::new(&words[0])
            .args(&words[1..])
            .envs(self.env.iter().map(|(k, v)| (k, v)))
            .stdin(Stdio::null())
            .stdout(std::fs::File::create(&out).expect("the output file can be created"))
            .stderr(std::fs::File::create(&err).expect("the error file can be created"))
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {}: {e}", self.display()));
        Background { child, out, err }
    }
}

impl Background {
    /// What the job has written so far: standard output and error.
    pub fn outputs(&self) -> (String, String) {
        let read = |p: &Path| std::fs::read_to_string(p).unwrap_or_default();
        (read(&self.out), read(&self.err))
    }

    /// Whether the job has ended (without waiting).
    ///
    /// # Panics
    /// If the process cannot be asked.
    pub fn has_ended(&mut self) -> bool {
        self.child.try_wait().expect("the job's process can be asked").is_some()
    }

    /// The process id of the launcher (`timeout`).
    pub fn id(&self) -> u32 {
        self.child.id()
    }

    /// Waits for the end (the job's timeout bounds it): its status and outputs.
    ///
    /// # Panics
    /// If the process cannot be waited for.
    pub fn wait(mut self) -> (ExitStatus, String, String) {
        let status = self.child.wait().expect("the job's process can be waited for");
        let (out, err) = self.outputs();
        (status, out, err)
    }

    /// Ends the job as a user would, with TERM to its launcher (which passes it on), and
    /// waits for it.
    pub fn terminate(self) -> (ExitStatus, String, String) {
        let _ = Command::new("kill").args(["-TERM", &self.child.id().to_string()]).status();
        self.wait()
    }
}
