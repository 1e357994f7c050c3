//! Request processors and RPC hooks: what a server or client runs for incoming requests.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use crate::channel::Channel;
use crate::command::RemotingCommand;
use crate::protocol::response_code;

/// A boxed future borrowing the processor.
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// Serves the requests of one service (name server, broker, client callbacks).
///
/// `process` is polled by the connection's reader, first as soon as the request is
/// read; it may await (a held pull waits for messages) but must not block the thread
/// (see the `channel` module). It returns the response, or `None` to send nothing. The
/// connection fills in the opaque and the response flag, and drops the response of a
/// oneway request. A panic in it is answered SYSTEM_ERROR; a panic in a server's
/// [`RpcHook`] leaves that one request unanswered, and both are logged.
pub trait RequestProcessor: Send + Sync + 'static {
    fn process<'a>(
        &'a self,
        channel: &'a Channel,
        request: RemotingCommand,
    ) -> BoxFuture<'a, Option<RemotingCommand>>;

    /// Called once when a connection is established.
    fn on_channel_connected(&self, _channel: &Channel) {}

    /// Called once when a connection is gone (closed by either side, idle or broken).
    fn on_channel_closed(&self, _channel: &Channel) {}
}

/// Answers every request with REQUEST_CODE_NOT_SUPPORTED: the default for clients
/// that register no processor.
pub struct NotSupported;

impl RequestProcessor for NotSupported {
    fn process<'a>(
        &'a self,
        _channel: &'a Channel,
        request: RemotingCommand,
    ) -> BoxFuture<'a, Option<RemotingCommand>> {
        Box::pin(async move { Some(not_supported(&request)) })
    }
}

/// The response to a request whose code has no processor.
pub fn not_supported(request: &RemotingCommand) -> RemotingCommand {
    RemotingCommand::response(
        response_code::REQUEST_CODE_NOT_SUPPORTED,
        format!(" request type {} not supported", request.code),
    )
}

/// Hooks run around every call a client makes and every request a server serves:
/// `before_request` may add ext fields (an ACL signature, a trace id).
pub trait RpcHook: Send + Sync + 'static {
    fn before_request(&self, remote_addr: &str, request: &mut RemotingCommand);
    fn after_response(
        &self,
        remote_addr: &str,
        request: &RemotingCommand,
        response: &mut RemotingCommand,
    );

    /// Whether `after_response` does anything: when no hook needs it, a call keeps no
    /// copy of its request for it (signing hooks do not).
    fn wants_response(&self) -> bool {
        true
    }
}

/// A list of hooks run in order. Shared: a call takes a snapshot of the list with one
/// reference count, not a copy of it.
#[derive(Clone, Default)]
pub struct RpcHooks(Arc<Vec<Arc<dyn RpcHook>>>);

impl RpcHooks {
    pub fn push(&mut self, hook: Arc<dyn RpcHook>) {
        Arc::make_mut(&mut self.0).push(hook);
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Whether any hook looks at responses.
    pub fn wants_response(&self) -> bool {
        self.0.iter().any(|h| h.wants_response())
    }

    pub fn before(&self, addr: &str, request: &mut RemotingCommand) {
        for hook in self.0.iter() {
            hook.before_request(addr, request);
        }
    }

    pub fn after(&self, addr: &str, request: &RemotingCommand, response: &mut RemotingCommand) {
        for hook in self.0.iter() {
            hook.after_response(addr, request, response);
        }
    }
}
