//! Lookahead(1) scheduling (the scheduling paper §3.2): for the current configuration and
//! each anticipated event, the successor configuration's schedule is computed ahead and
//! kept, keyed by configuration, so that when the event happens the switch is a lookup.
//! The nested graphs' τ tables are shared by all of them (one [`Scheduler`] memo), which is
//! what makes the set fast to compute.

use std::collections::{BTreeSet, HashMap};
use std::time::Instant;

use super::graph::{Family, GraphError};
use super::layered::{Layered, Scheduler};

/// An anticipated event.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Event {
    /// `lose:N`: N processors withdrawn.
    Lose(usize),
    /// `gain:N`: N processors added.
    Gain(usize),
    /// `drop:TASK`: a task (an application) removed, with every task depending on it.
    Drop(String),
}

impl Event {
    /// Parses `lose:N`, `gain:N` or `drop:TASK`.
    ///
    /// # Errors
    /// A phrase naming the event.
    pub fn parse(text: &str) -> Result<Event, String> {
        let count = |n: &str| {
            n.parse::<usize>()
                .ok()
                .filter(|&n| n >= 1)
                .ok_or_else(|| format!("event {text:?}: {n:?} is not a count of at least 1"))
        };
        match text.split_once(':') {
            Some(("lose", n)) => Ok(Event::Lose(count(n)?)),
            Some(("gain", n)) => Ok(Event::Gain(count(n)?)),
            Some(("drop", name)) if !name.is_empty() => Ok(Event::Drop(name.to_string())),
            _ => Err(format!("event {text:?}: expected lose:N, gain:N or drop:TASK")),
        }
    }
}

impl std::fmt::Display for Event {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Event::Lose(n) => write!(f, "lose:{n}"),
            Event::Gain(n) => write!(f, "gain:{n}"),
            Event::Drop(t) => write!(f, "drop:{t}"),
        }
    }
}

/// A configuration: the processors and the tasks removed from the root graph.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Config {
    /// P.
    pub procs: usize,
    /// Removed tasks (their dependants go with them).
    pub dropped: BTreeSet<String>,
}

impl Config {
    /// The configuration after `event`.
    ///
    /// # Errors
    /// A phrase when the event cannot happen here (all processors lost, an unknown task).
    pub fn after(&self, event: &Event, family: &Family) -> Result<Config, String> {
        let mut next = self.clone();
        match event {
            Event::Lose(n) if *n >= self.procs => {
                return Err(format!("{event}: only {} processors to lose", self.procs))
            }
            Event::Lose(n) => next.procs -= n,
            Event::Gain(n) => next.procs += n,
            Event::Drop(t) if family.root().task(t).is_none() => {
                return Err(format!("{event}: the graph has no task {t:?}"));
            }
            Event::Drop(t) => {
                next.dropped.insert(t.clone());
            }
        }
        Ok(next)
    }

    /// The family this configuration runs.
    ///
    /// # Errors
    /// When the reduced graph is invalid (it cannot be, being a sub-graph of a valid one).
    pub fn family(&self, base: &Family) -> Result<Family, GraphError> {
        base.with_root(base.root().without(&self.dropped))
    }
}

/// A pre-computed alternative.
#[derive(Clone, Debug)]
pub struct Alternative {
    /// The event leading to it.
    pub event: Event,
    /// Its configuration.
    pub config: Config,
    /// Its schedule.
    pub layered: Layered,
    /// Seconds it took to compute (with the memo as it was).
    pub compute_s: f64,
}

/// The current schedule and the alternatives for each anticipated event.
#[derive(Clone, Debug)]
pub struct Lookahead {
    /// The current configuration.
    pub config: Config,
    /// Its schedule.
    pub current: Layered,
    /// The alternatives, in the order of the events.
    pub alternatives: Vec<Alternative>,
    /// Seconds to compute the whole set (current and alternatives).
    pub compute_s: f64,
    by_config: HashMap<Config, usize>,
    by_event: HashMap<Event, usize>,
}

impl Lookahead {
    /// Computes the current schedule of `config` and one per event, with `scheduler` (whose
    /// memo they share).
    ///
    /// # Errors
    /// A phrase naming an event that cannot happen in `config`.
    pub fn compute(
        scheduler: &mut Scheduler,
        base: &Family,
        config: Config,
        events: &[Event],
    ) -> Result<Lookahead, String> {
        let clock = Instant::now();
        let family = config.family(base).map_err(|e| e.to_string())?;
        let current = scheduler.schedule(&family, family.root_id(), config.procs);
        let mut alternatives = Vec::new();
        let (mut by_config, mut by_event) = (HashMap::new(), HashMap::new());
        for event in events {
            let next = config.after(event, base)?;
            let started = Instant::now();
            let family = next.family(base).map_err(|e| e.to_string())?;
            let layered = scheduler.schedule(&family, family.root_id(), next.procs);
            let compute_s = started.elapsed().as_secs_f64();
            by_config.insert(next.clone(), alternatives.len());
            by_event.insert(event.clone(), alternatives.len());
            alternatives.push(Alternative { event: event.clone(), config: next, layered, compute_s });
        }
        Ok(Lookahead { config, current, alternatives, compute_s: clock.elapsed().as_secs_f64(), by_config, by_event })
    }

    /// The pre-computed schedule for `event`: the switch, a lookup.
    pub fn switch(&self, event: &Event) -> Option<&Alternative> {
        self.by_event.get(event).map(|&i| &self.alternatives[i])
    }

    /// The pre-computed schedule of configuration `config`, if it is one of the set.
    pub fn for_config(&self, config: &Config) -> Option<&Alternative> {
        self.by_config.get(config).map(|&i| &self.alternatives[i])
    }
}
