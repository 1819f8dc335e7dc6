//! The queue-pair interface every transport implements, shaped like verbs
//! plus rdma_cm so that the rdma-core transport maps onto it one to one and
//! the software transports fit as well: a [`Device`] with protection domains,
//! memory registration, [`CompletionQueue`]s, [`QueuePair`]s and [`Listener`]s.
//!
//! Invariants: posting borrows the scatter list and allocates nothing; every
//! posted work request completes exactly once (an unsignalled successful send
//! is counted in the next completion of its queue instead), in posting
//! order per queue, and returns its poster's `ctx`; [`CompletionQueue::poll`] never
//! blocks. A transport never sees DAT objects, handles or events, and the
//! DAT layer never sees sockets. The whole contract: docs/transport.md.

use std::net::SocketAddr;
use std::os::fd::BorrowedFd;
use std::sync::Arc;
use std::time::Duration;

use super::Capabilities;

/// A queue pair's number, unique on its device.
pub type QpNum = u32;

/// A protection domain of a device (an opaque id, never 0).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct PdId(pub u64);

/// One element of a scatter/gather list: registered memory named by its
/// local key. `addr` is a virtual address of the consumer's process.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Sge {
    pub addr: u64,
    pub len: u64,
    pub lkey: u32,
}

/// Access rights of a registration or binding.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct Access(u32);

impl Access {
    pub const NONE: Access = Access(0);
    pub const LOCAL_READ: Access = Access(1);
    pub const LOCAL_WRITE: Access = Access(2);
    pub const REMOTE_READ: Access = Access(4);
    pub const REMOTE_WRITE: Access = Access(8);

    /// Both.
    pub const fn union(self, o: Access) -> Access {
        Access(self.0 | o.0)
    }

    /// The rights in both.
    pub const fn intersection(self, o: Access) -> Access {
        Access(self.0 & o.0)
    }

    /// Every right of `o` is in `self`.
    pub const fn contains(self, o: Access) -> bool {
        self.0 & o.0 == o.0
    }

    /// Any remote right.
    pub const fn is_remote(self) -> bool {
        self.0 & (Self::REMOTE_READ.0 | Self::REMOTE_WRITE.0) != 0
    }

    /// The rights as stored in a key table entry.
    pub const fn bits(self) -> u32 {
        self.0
    }

    /// The rights [`Access::bits`] returned.
    pub const fn from_bits(bits: u32) -> Access {
        Access(bits)
    }
}

/// Why a use of registered memory was refused (a key check).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KeyFault {
    /// No live registration has this key (forged, stale, freed, or the
    /// wrong kind: a remote key used locally or the reverse).
    Key,
    /// The range is not inside the registration (or wraps around).
    Bounds,
    /// The registration does not grant the access.
    Rights,
    /// The registration is in another protection zone.
    Domain,
}

/// Why a range cannot be registered. When several apply, the first listed
/// here is reported.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum MemoryFault {
    /// Some byte is not mapped (or the range wraps around the address space).
    Unmapped,
    /// Some byte is mapped without read permission (`PROT_NONE`), or
    /// cannot be faulted in.
    NotReadable,
    /// Write access is needed and some byte is read-only.
    NotWritable,
    /// A shared registration and some byte is in a private mapping.
    NotShared,
}

/// A memory registration: the keys the transport chose for it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MemoryRegion {
    /// Names the registration locally (in [`Sge::lkey`]); the DAT `lmr_context`.
    pub lkey: u32,
    /// Names it to peers; 0 unless remote access was granted. The DAT
    /// `rmr_context` of an LMR.
    pub rkey: u32,
    /// The registered range (may be rounded out to pages).
    pub addr: u64,
    pub len: u64,
    /// The transport's own id of the registration.
    pub id: u64,
}

/// A memory window (the DAT RMR): allocated in a protection domain, bound
/// to part of a registration by a work request on a send queue.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct WindowId(pub u64);

/// What a send-queue work request does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SendOp {
    /// A Send consuming one receive at the peer; `solicited` asks the peer
    /// to notify a CQ armed for solicited completions.
    Send { solicited: bool },
    /// Writes the scatter list to `[remote_addr, …)` of the peer's memory
    /// named by `rkey`.
    RdmaWrite { remote_addr: u64, rkey: u32 },
    /// Reads `[remote_addr, …)` of the peer's memory into the scatter list.
    RdmaRead { remote_addr: u64, rkey: u32 },
}

/// A send-queue work request. The scatter list is borrowed for the call.
#[derive(Clone, Copy, Debug)]
pub struct SendWr<'a> {
    /// Returned in the completion (the DAT cookie).
    pub wr_id: u64,
    /// The poster's own word about the request, returned in its
    /// completion beside `wr_id` (the DAT layer keeps the post's flags
    /// there, so that it needs no record of its own per request).
    pub ctx: u64,
    pub op: SendOp,
    pub sgl: &'a [Sge],
    /// Produce a completion on success too (errors always complete). An
    /// unsignalled request that succeeds is counted in the
    /// [`Wc::implicit`] of the next completion of its send queue; a
    /// transport may complete it anyway (it then reports it as signalled).
    pub signaled: bool,
    /// Start only after every earlier RDMA Read of this queue pair completed.
    pub fence: bool,
}

/// A receive work request (on a queue pair or a shared receive queue).
#[derive(Clone, Copy, Debug)]
pub struct RecvWr<'a> {
    pub wr_id: u64,
    /// As [`SendWr::ctx`].
    pub ctx: u64,
    pub sgl: &'a [Sge],
}

/// A memory-window bind, posted on a send queue.
#[derive(Clone, Copy, Debug)]
pub struct BindWr {
    pub wr_id: u64,
    /// As [`SendWr::ctx`].
    pub ctx: u64,
    pub window: WindowId,
    /// The registration (its local key) and the part of it to expose.
    pub lkey: u32,
    pub addr: u64,
    pub len: u64,
    /// Remote rights the window grants (a zero length unbinds).
    pub access: Access,
    pub signaled: bool,
    pub fence: bool,
}

/// Why a post was refused (nothing was queued).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PostError {
    /// The queue pair is not in a state that accepts this work request.
    State,
    /// The queue is full (more outstanding requests than its depth).
    QueueFull,
    /// More scatter/gather elements than the queue pair allows.
    TooManySge,
    /// A length beyond the device's limits.
    Length,
    /// A local key, range or right is wrong (the same check the target
    /// applies to remote keys).
    Protection(KeyFault),
    /// The operation is not supported on this queue pair or device.
    Unsupported,
}

/// Why a device call failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DeviceError {
    /// A limit of the device or the process was reached.
    Resources,
    /// The memory cannot be registered (unmapped, not readable, not
    /// writable though write access was asked for, not shared).
    Memory(MemoryFault),
    /// An argument the device cannot accept.
    Invalid,
    /// The port (connection qualifier) is in use.
    PortInUse,
    /// No such object (already destroyed).
    NotFound,
    /// The object is in use (e.g. a registration a window is bound to).
    Busy,
    /// The call does not fit the object's state.
    State,
    /// The device does not implement this (e.g. memory windows or shared
    /// receive queues on a transport without them).
    Unsupported,
}

/// What a completion is for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WcOp {
    Send,
    RdmaWrite,
    RdmaRead,
    Bind,
    Recv,
}

/// How a work request ended (InfiniBand's statuses, which DAT's DTO
/// statuses assume).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WcStatus {
    Success,
    /// Not executed: the queue pair broke or was disconnected first.
    Flushed,
    /// A received message was longer than the receive buffer.
    LocalLength,
    /// A local key, range or right check failed while executing.
    LocalProtection,
    /// The request is not valid for the queue pair.
    LocalOperation,
    /// The peer refused a remote key, range or right.
    RemoteAccess,
    /// The peer could not process the request (e.g. a message too long for
    /// its receive buffer).
    RemoteOperation,
    /// The peer found the request malformed.
    RemoteInvalidRequest,
    /// No receive was posted at the peer within the receiver-not-ready time.
    ReceiverNotReady,
    /// The peer stopped answering (transport retries exhausted).
    TransportRetry,
    /// A memory-window bind failed.
    BindFailure,
    /// Any other fatal error of the queue pair.
    Fatal,
}

/// One completion.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Wc {
    pub wr_id: u64,
    /// The work request's [`SendWr::ctx`] / [`RecvWr::ctx`].
    pub ctx: u64,
    /// A send-queue completion: how many unsignalled requests posted
    /// before this one on the same send queue succeeded without a
    /// completion of their own since the queue's previous completion
    /// (verbs' rule: a completion implies that every request posted before
    /// it is done). 0 for receives.
    pub implicit: u32,
    pub status: WcStatus,
    pub op: WcOp,
    /// Bytes transferred (for receives: bytes placed).
    pub byte_len: u64,
    /// The queue pair the work request was posted on.
    pub qp: QpNum,
    /// A receive completed by a Send with the solicited flag.
    pub solicited: bool,
}

impl Wc {
    /// A blank completion, to initialise poll buffers (what a poll fills
    /// in replaces it; its status says nothing completed).
    pub const BLANK: Wc = Wc {
        wr_id: 0,
        ctx: 0,
        implicit: 0,
        status: WcStatus::Fatal,
        op: WcOp::Send,
        byte_len: 0,
        qp: 0,
        solicited: false,
    };
}

/// A completion queue: polled, never blocking.
pub trait CompletionQueue: Send + Sync {
    /// Drives the engine of the queue pairs feeding this queue (reads
    /// sockets, places data, produces completions), then moves up to
    /// `out.len()` completions into `out`. Returns how many. Never blocks
    /// and never allocates.
    fn poll(&self, out: &mut [Wc]) -> usize {
        self.progress();
        let n = self.take(out);
        self.polled(n);
        n
    }

    /// True if [`CompletionQueue::progress`] and [`CompletionQueue::polled`]
    /// do nothing and [`CompletionQueue::busy`] is always false: the device
    /// moves the data itself (verbs). A consumer may then take completions
    /// under its own lock without the other two steps. Asked once.
    fn passive(&self) -> bool {
        false
    }

    /// The first part of [`CompletionQueue::poll`]: drives the engines of
    /// the queue pairs feeding the queue. Call it with no lock held (the
    /// engines report connection events to the DAT layer).
    fn progress(&self);

    /// The second part: moves up to `out.len()` completions into `out`
    /// without driving anything; it takes only the queue's own lock, so a
    /// consumer may call it under its own (to take completions and queue
    /// them as events in one step: two consumers taking at once cannot
    /// then reorder them, nor one take them while another looks).
    fn take(&self, out: &mut [Wc]) -> usize;

    /// The last part: tells the queue what the poll brought (`got`
    /// completions), with no lock held (a spinning consumer drives the
    /// queue pairs: see the transport).
    fn polled(&self, got: usize);

    /// Asks for one notification: the next completion (with
    /// `solicited_only`, the next solicited receive or any error) makes
    /// [`CompletionQueue::wait_fd`] readable, and runs the hook
    /// ([`CompletionQueue::on_notify`]). A notification that fired earlier
    /// stays until [`CompletionQueue::clear_notification`] (as a verbs
    /// completion event stays on its channel until it is read): re-arming
    /// never consumes one that a sleeper has yet to see.
    fn arm(&self, solicited_only: bool);

    /// Consumes the notifications that fired: the thread that sleeps on
    /// [`CompletionQueue::wait_fd`] calls it before it arms and looks at
    /// the queue a last time. From the first call on, that thread may be
    /// the one that reads the queue's notifications (a transport need not
    /// wake a thread of its own for each) until it calls
    /// [`CompletionQueue::release_notifications`].
    fn clear_notification(&self);

    /// The thread that called [`CompletionQueue::clear_notification`] no
    /// longer sleeps on [`CompletionQueue::wait_fd`]; notifications go
    /// where they went before (e.g. to the hook of
    /// [`CompletionQueue::on_notify`]).
    fn release_notifications(&self) {}

    /// What a waiting thread sleeps on: readable when an armed notification
    /// fired, or when the queue pairs feeding the queue need progress (data
    /// arrived on their connections).
    fn wait_fd(&self) -> BorrowedFd<'_>;

    /// A thread starts (`true`) or stops (`false`) sleeping on this
    /// queue's descriptors ([`CompletionQueue::wait_fd`] or
    /// [`CompletionQueue::input_fd`]): it drives the queue pairs feeding it
    /// when data arrives for them, so the transport's own thread need not
    /// be woken too. Calls must pair up.
    fn sleeping(&self, on: bool);

    /// Readable when the queue pairs feeding the queue need progress, but
    /// not for notifications: what a thread that waits for several queues
    /// through their notification hooks (a DAT CNO) sleeps on, so that it
    /// drives their queue pairs itself.
    fn input_fd(&self) -> BorrowedFd<'_>;

    /// Runs `hook` whenever an armed notification fires, on the thread
    /// that produced the completion (an application thread or the
    /// transport's own), with no lock of the queue held: how a DAT CNO
    /// learns of completions nobody is polling for. `None` removes it.
    fn on_notify(&self, hook: Option<std::sync::Arc<dyn Fn() + Send + Sync>>);

    /// True if completions are queued now (a poll would return some
    /// without driving anything).
    fn has_completions(&self) -> bool;

    /// True if a poll now would move data the queue pairs feeding this
    /// queue already hold (output waiting for socket space or cut at a
    /// budget, input left unread at a budget). A consumer that still has
    /// completions in hand needs to poll again only then. A hint: it may
    /// be stale by a poll; a transport that cannot tell says true.
    fn busy(&self) -> bool {
        true
    }

    /// The number of completions the queue holds.
    fn depth(&self) -> u32;

    /// Changes the depth (not below the completions queued now).
    fn resize(&self, depth: u32) -> Result<(), DeviceError>;
}

/// A shared receive queue.
pub trait SharedReceiveQueue: Send + Sync {
    fn post_recv(&self, wr: &RecvWr<'_>) -> Result<(), PostError>;
    /// Receives posted and not yet consumed.
    fn outstanding(&self) -> u32;
    fn depth(&self) -> u32;
    fn resize(&self, depth: u32) -> Result<(), DeviceError>;
}

/// The state of a queue pair, as verbs and rdma_cm see it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum QpState {
    /// Created; receives may be posted.
    Idle,
    /// Connecting (active) or accepting (passive).
    Connecting,
    /// Connected: everything may be posted.
    Connected,
    /// Disconnecting gracefully.
    Disconnecting,
    /// Disconnected or broken: outstanding work has been flushed.
    Closed,
}

/// How the queue pair is built.
#[derive(Clone)]
pub struct QpConfig {
    pub pd: PdId,
    pub send_cq: Arc<dyn CompletionQueue>,
    pub recv_cq: Arc<dyn CompletionQueue>,
    /// Receives come from this shared queue instead of the queue pair's own.
    pub srq: Option<Arc<dyn SharedReceiveQueue>>,
    pub send_depth: u32,
    pub recv_depth: u32,
    pub max_send_sge: u32,
    pub max_recv_sge: u32,
    /// Inbound and outbound RDMA Reads in flight.
    pub ird: u32,
    pub ord: u32,
    /// Receives connection events.
    pub cm: Arc<dyn CmHandler>,
}

/// Connection events. Private data is borrowed for the call; the handler
/// copies what it keeps.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CmEvent<'a> {
    /// On a listener: a peer asks to connect. Answer with
    /// [`Device::accept`] or [`Listener::reject`] and `request`.
    ConnectRequest {
        request: u64,
        remote: SocketAddr,
        local: SocketAddr,
        port: u16,
        private_data: &'a [u8],
    },
    /// On a queue pair: connected (active side: the peer's reply data).
    Established { private_data: &'a [u8] },
    /// On a queue pair: the peer rejected the request.
    Rejected { private_data: &'a [u8] },
    /// On a queue pair: the address is unreachable (no route, no answer).
    Unreachable,
    /// On a queue pair: the peer host refused the connection (nothing
    /// listens on that port).
    Refused,
    /// On a queue pair: the exchange did not finish in time.
    TimedOut,
    /// On a queue pair: accepting failed (the peer went away meanwhile).
    AcceptFailed,
    /// On a queue pair: the connection was closed in an orderly way.
    Disconnected,
    /// On a queue pair: the connection broke (reset, silence, protocol error).
    Broken,
}

/// Receives connection events. Called from whichever thread drives the
/// engine, with no transport lock held that the handler's calls need.
/// Never from within [`QueuePair::num`], [`QueuePair::state`],
/// [`QueuePair::recv_outstanding`] or [`QueuePair::local_addr`]: the
/// consumer calls those under its own locks, even from a handler.
pub trait CmHandler: Send + Sync {
    /// `qp` is the queue pair the event is about (`None` on a listener).
    fn event(&self, qp: Option<QpNum>, ev: CmEvent<'_>);
}

/// A reliable-connection queue pair.
pub trait QueuePair: Send + Sync {
    fn num(&self) -> QpNum;
    fn state(&self) -> QpState;

    /// Posts to the send queue. Allocates nothing.
    fn post_send(&self, wr: &SendWr<'_>) -> Result<(), PostError>;
    /// Posts to the receive queue (not allowed with an SRQ).
    fn post_recv(&self, wr: &RecvWr<'_>) -> Result<(), PostError>;
    /// Posts a memory-window bind; returns the window's new remote key,
    /// valid once the bind has executed. A transport without memory
    /// windows keeps the default: `Unsupported`.
    fn post_bind(&self, wr: &BindWr) -> Result<u32, PostError> {
        let _ = wr;
        Err(PostError::Unsupported)
    }

    /// Starts connecting to `remote` (its port is ignored) at `port`.
    fn connect(
        &self,
        remote: SocketAddr,
        port: u16,
        private_data: &[u8],
        timeout: Duration,
    ) -> Result<(), DeviceError>;
    /// Closes the connection: gracefully (queued work finishes first) or
    /// abruptly (queued work is flushed). Ends with `Disconnected`.
    fn disconnect(&self, graceful: bool) -> Result<(), DeviceError>;
    /// Returns a closed queue pair to `Idle` (flushing what is left).
    fn reset(&self) -> Result<(), DeviceError>;
    /// Receives posted and not yet consumed, and the queue's depth.
    fn recv_outstanding(&self) -> (u32, u32);
    /// The local address of the connection, while connected.
    fn local_addr(&self) -> Option<std::net::SocketAddr> {
        None
    }
}

/// The private data of a refusal that is not the consumer's (a full
/// backlog, a second request on an RSP): a
/// transport sends it with such a refusal, and the active side reports
/// `NON_PEER_REJECTED` when a rejection carries it (docs/endpoints.md).
pub const REFUSAL_MARK: &[u8] = b"\0DAT-NPR";

/// A listening port.
pub trait Listener: Send + Sync {
    /// The port it listens on (chosen by the device when 0 was asked).
    fn port(&self) -> u16;
    /// Refuses a pending request, sending `private_data` with the refusal.
    fn reject(&self, request: u64, private_data: &[u8]) -> Result<(), DeviceError>;
    /// Stops listening now: the port is free for another listener when
    /// this returns, even while other holders keep the object alive.
    /// Requests already accepted stay pending until answered.
    fn close(&self);
}

/// An opened adapter.
///
/// What a transport may lack has a default that says so: memory windows
/// and shared receive queues answer [`DeviceError::Unsupported`] (and the
/// transport's [`Capabilities`] say `max_mw` / `max_srq` = 0), so a small
/// transport implements only the rest.
pub trait Device: Send + Sync {
    fn capabilities(&self) -> &Capabilities;
    /// What the device says of itself for users (`dat_ia_query`'s
    /// provider-specific attributes): e.g. the RDMA device and port.
    fn attributes(&self) -> Vec<(&'static str, String)> {
        Vec::new()
    }
    /// The address peers connect to.
    fn address(&self) -> SocketAddr;

    /// The port (in the transport's port space, as rdma_cm's) that a
    /// 64-bit service id — the DAT connection qualifier — names on this
    /// device: what [`Device::listen`] and [`QueuePair::connect`] take.
    /// Service id 0 names port 0 (any port).
    fn port_of_service(&self, service: u64) -> u16;

    fn alloc_pd(&self) -> Result<PdId, DeviceError>;
    fn dealloc_pd(&self, pd: PdId) -> Result<(), DeviceError>;

    /// Registers `[addr, addr + len)` in `pd` with `access`. The transport
    /// checks what it needs of the memory (mapped, readable, writable when
    /// write access is asked for): [`DeviceError::Memory`] otherwise.
    fn register(
        &self,
        pd: PdId,
        addr: u64,
        len: u64,
        access: Access,
    ) -> Result<MemoryRegion, DeviceError>;
    /// Registers memory that other processes map too (DAT's shared
    /// virtual memory): as [`Device::register`], and a transport that
    /// shares memory between processes refuses memory that is not shared
    /// ([`MemoryFault::NotShared`]).
    fn register_shared(
        &self,
        pd: PdId,
        addr: u64,
        len: u64,
        access: Access,
    ) -> Result<MemoryRegion, DeviceError> {
        self.register(pd, addr, len, access)
    }
    /// Registers again the memory `base` covers, in `pd` with `access`:
    /// a registration of its own with its own keys; the memory is not
    /// checked again.
    fn register_same(
        &self,
        base: &MemoryRegion,
        pd: PdId,
        access: Access,
    ) -> Result<MemoryRegion, DeviceError> {
        self.register(pd, base.addr, base.len, access)
    }
    /// Revokes a registration: both keys stop working at once.
    fn deregister(&self, mr: &MemoryRegion) -> Result<(), DeviceError>;

    /// Checks a local use of memory as a post would: `lkey` names a live
    /// registration (of `pd`, when given) that covers `[addr, addr + len)`
    /// and grants `need`. Takes no lock: it is on the data path of posts
    /// the transport does not see.
    fn check_local(
        &self,
        lkey: u32,
        addr: u64,
        len: u64,
        need: Access,
        pd: Option<PdId>,
    ) -> Result<(), KeyFault>;

    /// Allocates a memory window in `pd`; its id is opaque, its remote key
    /// comes from [`QueuePair::post_bind`].
    fn alloc_window(&self, pd: PdId) -> Result<WindowId, DeviceError> {
        let _ = pd;
        Err(DeviceError::Unsupported)
    }
    fn dealloc_window(&self, w: WindowId) -> Result<(), DeviceError> {
        let _ = w;
        Err(DeviceError::Unsupported)
    }

    fn create_cq(&self, depth: u32) -> Result<Arc<dyn CompletionQueue>, DeviceError>;
    fn create_srq(
        &self,
        pd: PdId,
        depth: u32,
        max_sge: u32,
    ) -> Result<Arc<dyn SharedReceiveQueue>, DeviceError> {
        let _ = (pd, depth, max_sge);
        Err(DeviceError::Unsupported)
    }
    fn create_qp(&self, cfg: QpConfig) -> Result<Arc<dyn QueuePair>, DeviceError>;

    /// Listens on `port` (0: any free port), on the device's address and
    /// on loopback.
    fn listen(&self, port: u16, cm: Arc<dyn CmHandler>) -> Result<Arc<dyn Listener>, DeviceError>;
    /// Accepts a pending request on `qp`, sending `private_data`.
    fn accept(
        &self,
        request: u64,
        qp: &dyn QueuePair,
        private_data: &[u8],
    ) -> Result<(), DeviceError>;

    /// Drives the engine of every queue pair and listener of the device
    /// once; returns whether anything happened. (The transport moves data
    /// on arrival by itself; this is for tests and for threads that want
    /// to help.)
    fn progress(&self) -> bool;
}
