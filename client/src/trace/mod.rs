//! Message trace as RocketMQ's clients write it (docs/trace.md): with `enableMsgTrace`
//! a producer writes a `Pub` record per send and an `EndTransaction` record per ended
//! transaction, a push consumer a `SubBefore` and a `SubAfter` record per listener
//! call, to the trace topic (`RMQ_SYS_TRACE_TOPIC`, or `customizedTraceTopic`).
//!
//! * [`data`]: the records and their text format (Java `TraceDataEncoder`).
//! * [`dispatcher`]: the bounded queue and batching (Java `AsyncTraceDispatcher`); the
//!   producer it sends with is built by `producer::trace`.
//! * [`hook`]: the send, consume and end-transaction hooks that make the records.
//!
//! Records written by Apache's clients decode the same way; `mqadmin queryMsgTraceById`
//! reads them back through the broker's index (a trace message's keys are the msgIds
//! and message keys it holds).

pub mod data;
pub mod dispatcher;
pub mod hook;

use vostok_remoting::protocol::topic::TRACE_TOPIC;

pub use data::{MessageType, TraceBean, TraceContext, TraceType};
pub use dispatcher::{TraceDispatcher, TraceProducer};

/// Trace options of a producer or a consumer (Java `enableMsgTrace`,
/// `customizedTraceTopic`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TraceConfig {
    /// `enableMsgTrace`: write trace records.
    pub enable_msg_trace: bool,
    /// `customizedTraceTopic`: the trace topic; `None` is `RMQ_SYS_TRACE_TOPIC`.
    pub customized_trace_topic: Option<String>,
}

impl TraceConfig {
    /// Tracing on, to the default trace topic.
    pub fn enabled() -> Self {
        TraceConfig {
            enable_msg_trace: true,
            customized_trace_topic: None,
        }
    }

    pub fn topic(&self) -> &str {
        self.customized_trace_topic
            .as_deref()
            .filter(|t| !t.trim().is_empty())
            .unwrap_or(TRACE_TOPIC)
    }
}
