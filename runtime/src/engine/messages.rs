//! The messages ranks and threads exchange. Headers are bincode-encoded on the wire; token
//! payloads travel beside them (see `wire`).

use serde::{Deserialize, Serialize};

use crate::node::AnyToken;
use crate::wire::WireToken;

/// A thread: its collection and its index in it.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) struct ThreadAddr {
    pub(crate) coll: u32,
    pub(crate) index: u32,
}

/// One split-merge instance, unique in the job: the opening rank and its counter.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) struct InstanceId {
    pub(super) rank: u32,
    pub(super) seq: u64,
}

/// No flow-control slot: the opener has no window.
pub(super) const NO_SLOT: u32 = u32::MAX;

/// What a token carries about one enclosing split instance.
#[derive(Serialize, Deserialize, Clone, Debug)]
pub(crate) struct Frame {
    pub(super) instance: InstanceId,
    /// The split (or stream) thread, where credits return.
    pub(crate) opener: ThreadAddr,
    pub(crate) slot: u32,
    /// Index of the merge thread in the closing node's collection.
    pub(super) merge_thread: u32,
}

/// A token's context: the call it belongs to and its stack of open instances.
#[derive(Serialize, Deserialize, Clone, Debug)]
pub(crate) struct Ctx {
    pub(super) call_rank: u32,
    pub(super) call: u64,
    pub(crate) frames: Vec<Frame>,
}

impl Ctx {
    pub(super) fn slot(&self) -> Option<usize> {
        self.frames.last().filter(|f| f.slot != NO_SLOT).map(|f| f.slot as usize)
    }
}

#[derive(Serialize, Deserialize, Debug)]
pub(crate) enum Header {
    /// A token for node `node` of graph `graph`, on thread `to`; `first`: queued ahead of
    /// the plain tokens waiting there (`Node::first_if`).
    Token {
        to: ThreadAddr,
        graph: u32,
        node: u32,
        ctx: Ctx,
        first: bool,
    },
    /// The opener of `instance` produced `total` tokens; `ctx` is the context outside it.
    Close {
        to: ThreadAddr,
        graph: u32,
        node: u32,
        ctx: Ctx,
        instance: InstanceId,
        total: u64,
    },
    /// A token of `instance` in flow-control slot `slot` was merged.
    Credit {
        to: ThreadAddr,
        instance: InstanceId,
        slot: u32,
    },
    /// Rank `requester` asks thread `to` to move to rank `dest` (move `id` of the
    /// requester); see `engine::migration`.
    Move {
        to: ThreadAddr,
        dest: u32,
        requester: u32,
        id: u64,
    },
    /// Thread `to`'s state (the payload), moving in; its `epoch`-th move.
    Install {
        to: ThreadAddr,
        epoch: u32,
        requester: u32,
        id: u64,
    },
    /// Thread `thread` lives on `rank` since its `epoch`-th move.
    Located {
        thread: ThreadAddr,
        rank: u32,
        epoch: u32,
    },
    /// The output of call `call` of graph `graph`.
    Reply {
        graph: u32,
        call: u64,
    },
    /// Call `call` failed: a parallel service it called did not answer.
    Failed {
        call: u64,
        message: String,
    },
    Control(Control),
}

/// Messages between the runtimes of different ranks (not between threads).
#[derive(Serialize, Deserialize, Debug, Clone)]
pub(crate) enum Control {
    /// Rank `from` built graph `graph` with this description.
    Fingerprint { graph: u32, from: u32, description: String },
    /// Rank 0's verdict on graph `graph`: `None` if all ranks agree.
    Verdict { graph: u32, error: Option<String> },
    /// Rank `from` has finished its own calls and is ready to shut down.
    Done { from: u32 },
    /// Rank 0 to all: shut down.
    Shutdown,
    /// Rank `from`'s trace events (a JSON array).
    Trace { from: u32, events: String },
    /// Rank 0 to all: whether it can write the trace file (`None`) or what is wrong.
    TraceReady { error: Option<String> },
    /// To the requester of move `id`: the thread has arrived.
    Moved { id: u64 },
    /// Rank 0 to all: whether it exported a service (`None`) or what is wrong.
    Exported { error: Option<String> },
}

/// A token, moved (same rank) or encoded (from another rank).
pub(crate) enum Payload {
    Local(AnyToken),
    Wire(WireToken),
}

impl Payload {
    pub(crate) fn into_token(self, decode: fn(WireToken) -> AnyToken) -> AnyToken {
        match self {
            Payload::Local(t) => t,
            Payload::Wire(w) => decode(w),
        }
    }
}
