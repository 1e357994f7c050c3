//! Messages: properties, sysFlag, commitlog records, batches and ids (PROTOCOL.md 5, 6.3).
//!
//! The commitlog record format is also the wire format of pull, query and view
//! responses, so the store and every client share this one codec.

pub mod batch;
pub mod id;
pub mod property;
pub mod record;
pub mod sysflag;

pub use property::Properties;
pub use record::{MessageExt, RecordView};
