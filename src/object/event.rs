//! Events as the object layer sees them. The ffi layer turns them into
//! `DAT_EVENT` structs; the numbers are the 1.2 `DAT_EVENT_NUMBER` values.

use crate::handle::Handle;

/// `DAT_DTO_COMPLETION_EVENT`.
pub const DTO_COMPLETION: u32 = 0x00001;
/// `DAT_RMR_BIND_COMPLETION_EVENT`.
pub const RMR_BIND_COMPLETION: u32 = 0x01001;
/// `DAT_CONNECTION_REQUEST_EVENT`.
pub const CONNECTION_REQUEST: u32 = 0x02001;
/// `DAT_CONNECTION_EVENT_ESTABLISHED` … `_UNREACHABLE` are 0x04001 … 0x04008.
pub const CONNECTION_ESTABLISHED: u32 = 0x04001;
/// `DAT_CONNECTION_EVENT_PEER_REJECTED`.
pub const CONNECTION_PEER_REJECTED: u32 = 0x04002;
/// `DAT_CONNECTION_EVENT_NON_PEER_REJECTED`.
pub const CONNECTION_NON_PEER_REJECTED: u32 = 0x04003;
/// `DAT_CONNECTION_EVENT_ACCEPT_COMPLETION_ERROR`.
pub const CONNECTION_ACCEPT_COMPLETION_ERROR: u32 = 0x04004;
/// `DAT_CONNECTION_EVENT_DISCONNECTED`.
pub const CONNECTION_DISCONNECTED: u32 = 0x04005;
/// `DAT_CONNECTION_EVENT_BROKEN`.
pub const CONNECTION_BROKEN: u32 = 0x04006;
/// `DAT_CONNECTION_EVENT_TIMED_OUT`.
pub const CONNECTION_TIMED_OUT: u32 = 0x04007;
/// `DAT_CONNECTION_EVENT_UNREACHABLE`.
pub const CONNECTION_UNREACHABLE: u32 = 0x04008;
/// `DAT_ASYNC_ERROR_EVD_OVERFLOW`.
pub const ASYNC_EVD_OVERFLOW: u32 = 0x08001;
/// `DAT_ASYNC_ERROR_IA_CATASTROPHIC`.
pub const ASYNC_IA_CATASTROPHIC: u32 = 0x08002;
/// `DAT_SOFTWARE_EVENT`.
pub const SOFTWARE: u32 = 0x10001;

/// `DAT_TIMEOUT_INFINITE`: an EVD or CNO wait with no deadline.
pub const TIMEOUT_INFINITE: u32 = u32::MAX;

/// `DAT_EVD_OVERFLOW_ERROR`.
pub const REASON_EVD_OVERFLOW: i32 = 0;
/// `DAT_IA_CATASTROPHIC_ERROR`.
pub const REASON_IA_CATASTROPHIC: i32 = 0;

/// The event-specific part of an event.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EventData {
    /// `software_event_data`: the consumer's pointer value, not what it points at.
    Software { pointer: usize },
    /// `dto_completion_event_data`.
    Dto {
        ep: Handle,
        cookie: u64,
        status: u32,
        length: u64,
    },
    /// `rmr_completion_event_data`.
    RmrBind {
        rmr: Handle,
        cookie: u64,
        status: u32,
    },
    /// `cr_arrival_event_data`.
    ConnectionRequest {
        sp: Handle,
        local_addr: usize,
        conn_qual: u64,
        cr: Handle,
    },
    /// `connect_event_data`.
    Connection {
        ep: Handle,
        private_data_size: i32,
        private_data: usize,
    },
    /// `asynch_error_event_data`.
    AsyncError { handle: Handle, reason: i32 },
}

/// A DTO slot an event holds until it is dequeued (semantics-ep.md §3.6:
/// a DTO counts against the endpoint's queue depth until its completion
/// has been dequeued).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Credit {
    #[default]
    None,
    /// A request DTO (or RMR bind) of the endpoint.
    Request(Handle),
    /// A receive of the endpoint.
    Recv(Handle),
    /// A receive taken from the SRQ.
    Srq(Handle),
}

/// One queued event.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Event {
    /// `DAT_EVENT_NUMBER`.
    pub number: u32,
    /// The EVD the event was dequeued from (set by the EVD).
    pub evd: Handle,
    /// The event data.
    pub data: EventData,
    /// Released when the event is dequeued.
    pub credit: Credit,
}

impl Event {
    /// A software event carrying `pointer`.
    pub fn software(pointer: usize) -> Event {
        Event {
            number: SOFTWARE,
            evd: Handle::NULL,
            data: EventData::Software { pointer },
            credit: Credit::None,
        }
    }

    /// A provider event with no DTO slot.
    pub fn new(number: u32, data: EventData) -> Event {
        Event {
            number,
            evd: Handle::NULL,
            data,
            credit: Credit::None,
        }
    }
}
