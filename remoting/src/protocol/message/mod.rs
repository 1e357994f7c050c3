//! Messages: properties, sysFlag, commitlog records, batches and ids (docs/message.md,
//! docs/store.md#commitlog-record-layout).
//!
//! The commitlog record format is also the wire format of pull, query and view
//! responses, so the store and every client share this one codec.

pub mod batch;
pub mod ext;
pub mod id;
pub mod property;
pub mod record;
pub mod sysflag;

pub use ext::MessageExt;
pub use property::Properties;
pub use record::RecordView;
