//! gRPC client sessions (Apache's `GrpcChannelManager` and `GrpcClientSettingsManager`):
//! one per client id that sent its settings, bounded by `grpcMaxSessions`.
//!
//! A session holds the client's settings, its current telemetry stream and a detached
//! [`Channel`] under which it is registered in the broker's client registry, so that
//! connection listings show it and the transaction check service reaches it like any
//! producer. What the broker writes to that channel is read by the session's
//! forwarder task and turned into telemetry commands. The session ends when the client
//! says so (NotifyClientTermination), when the housekeeping drops the channel after
//! `channelExpiredTimeout` without a heartbeat, or at shutdown.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, RwLock, Weak};

use tokio::sync::mpsc;
use tracing::{debug, info};
use vostok_remoting::protocol::header::{CheckTransactionStateRequestHeader, CommandHeader};
use vostok_remoting::protocol::message::id::create_offset_msg_id;
use vostok_remoting::protocol::message::MessageExt;
use vostok_remoting::protocol::request_code;
use vostok_remoting::support::sync::{MutexExt, RwLockExt};
use vostok_remoting::{Channel, DetachedReceiver, LanguageCode, RemotingCommand};

use super::context::RequestContext;
use super::convert::{to_proto, Delivery};
use super::proto::telemetry_command::Command;
use super::proto::{Code, RecoverOrphanedTransactionCommand, Settings, Status, TelemetryCommand};
use super::status::{ok, status};
use crate::ops::clients;
use crate::state::Broker;

/// Commands the broker may queue for one client before further ones wait (and time
/// out: a check-back not delivered is asked again in the next round).
const CHANNEL_QUEUE: usize = 64;

/// The sending half of a telemetry stream.
pub(crate) type TelemetrySender = mpsc::Sender<Result<TelemetryCommand, tonic::Status>>;

/// One client.
pub(crate) struct Session {
    pub(crate) client_id: String,
    pub(crate) language: LanguageCode,
    /// For naming resources in commands the broker sends.
    pub(crate) context: RequestContext,
    pub(crate) channel: Channel,
    settings: Mutex<Option<Settings>>,
    telemetry: Mutex<Option<TelemetrySender>>,
}

impl Session {
    /// The settings as the client sent them.
    pub(crate) fn settings(&self) -> Option<Settings> {
        self.settings.locked().clone()
    }

    pub(crate) fn set_settings(&self, settings: Settings) {
        *self.settings.locked() = Some(settings);
    }

    pub(crate) fn set_telemetry(&self, tx: TelemetrySender) {
        *self.telemetry.locked() = Some(tx);
    }

    /// Forgets the telemetry stream `tx` feeds, if it is still the current one (its
    /// client closed it), so that the stream ends.
    pub(crate) fn detach_telemetry(&self, tx: &TelemetrySender) {
        let mut current = self.telemetry.locked();
        if current.as_ref().is_some_and(|c| c.same_channel(tx)) {
            *current = None;
        }
    }

    /// Queues a command on the client's telemetry stream; false when there is no
    /// stream or its queue is full (the client is not reading).
    pub(crate) fn push(&self, command: TelemetryCommand) -> bool {
        let tx = self.telemetry.locked().clone();
        match tx {
            Some(tx) => tx.try_send(Ok(command)).is_ok(),
            None => false,
        }
    }
}

/// Every session, by client id.
pub(crate) struct Sessions {
    table: RwLock<HashMap<String, Arc<Session>>>,
    max: usize,
}

impl Sessions {
    pub(crate) fn new(max: usize) -> Self {
        Sessions {
            table: RwLock::new(HashMap::new()),
            max: max.max(1),
        }
    }

    pub(crate) fn get(&self, client_id: &str) -> Option<Arc<Session>> {
        self.table
            .read_locked()
            .get(client_id)
            .filter(|s| !s.channel.is_closed())
            .cloned()
    }

    /// The client's session, created (with its forwarder task) on first use.
    pub(crate) fn open(
        self: &Arc<Self>,
        broker: &Arc<Broker>,
        ctx: &RequestContext,
    ) -> Result<Arc<Session>, Status> {
        if let Some(session) = self.get(&ctx.client_id) {
            return Ok(session);
        }
        let (session, rx) = {
            let mut table = self.table.write_locked();
            if let Some(s) = table.get(&ctx.client_id).filter(|s| !s.channel.is_closed()) {
                return Ok(s.clone());
            }
            if table.len() >= self.max {
                return Err(status(
                    Code::TooManyRequests,
                    format!(
                        "too many gRPC client sessions (grpcMaxSessions = {})",
                        self.max
                    ),
                ));
            }
            let (channel, rx) = Channel::detached(ctx.remote, ctx.local, CHANNEL_QUEUE);
            let session = Arc::new(Session {
                client_id: ctx.client_id.clone(),
                language: ctx.language,
                context: ctx.clone(),
                channel,
                settings: Mutex::new(None),
                telemetry: Mutex::new(None),
            });
            table.insert(ctx.client_id.clone(), session.clone());
            (session, rx)
        };
        info!(client = %session.client_id, peer = %ctx.remote, language = %ctx.language, "gRPC client session opened");
        let weak = Arc::downgrade(self);
        let b = broker.clone();
        let s = session.clone();
        broker
            .life
            .tasks
            .spawn(async move { forward(b, weak, s, rx).await });
        Ok(session)
    }

    /// Ends a session: it leaves every group at once.
    pub(crate) fn close(&self, broker: &Broker, client_id: &str) -> Option<Arc<Session>> {
        let session = self.table.write_locked().remove(client_id)?;
        session.channel.close();
        clients::on_channel_closed(
            &broker.consumers,
            &broker.config,
            &broker.life,
            &session.channel,
        );
        Some(session)
    }

    /// Ends every session (shutdown).
    pub(crate) fn close_all(&self) {
        let all: Vec<Arc<Session>> = self.table.write_locked().drain().map(|(_, s)| s).collect();
        for session in all {
            session.channel.close();
        }
    }

    fn remove_if_same(&self, session: &Arc<Session>) {
        let mut table = self.table.write_locked();
        if table
            .get(&session.client_id)
            .is_some_and(|s| Arc::ptr_eq(s, session))
        {
            table.remove(&session.client_id);
        }
    }
}

/// Turns what the broker writes to a session's channel into telemetry commands, until
/// the channel closes; then the session leaves the table and the registry.
async fn forward(
    broker: Arc<Broker>,
    sessions: Weak<Sessions>,
    session: Arc<Session>,
    mut rx: DetachedReceiver,
) {
    loop {
        let command = tokio::select! {
            c = rx.recv() => c,
            _ = broker.life.shutdown.cancelled() => None,
        };
        let Some(command) = command else { break };
        match translate(&session, command) {
            Some(t) => {
                if !session.push(t) {
                    debug!(client = %session.client_id, "telemetry command dropped: no stream or a full one");
                }
            }
            None => {
                debug!(client = %session.client_id, "broker command without a gRPC form ignored")
            }
        }
    }
    session.channel.close();
    if let Some(sessions) = sessions.upgrade() {
        sessions.remove_if_same(&session);
    }
    clients::on_channel_closed(
        &broker.consumers,
        &broker.config,
        &broker.life,
        &session.channel,
    );
    info!(client = %session.client_id, "gRPC client session closed");
}

/// How long a consumer's receive is held at most (Apache's proxy default
/// `grpcClientConsumerLongPollingTimeoutMillis`), as the settings tell the clients.
pub(crate) const CONSUMER_LONG_POLLING_MS: i64 = 20_000;

/// The gRPC form of a command the broker wrote to a session's channel, if it has one.
pub(crate) fn translate(session: &Session, command: RemotingCommand) -> Option<TelemetryCommand> {
    if command.code != request_code::CHECK_TRANSACTION_STATE {
        return None;
    }
    let header = CheckTransactionStateRequestHeader::read_from(&command.ext_fields).ok()?;
    let msg = MessageExt::decode(&command.body, false).ok()?;
    // The transaction id names the half message to end: its offset message id.
    let transaction_id = header
        .offset_msg_id
        .unwrap_or_else(|| create_offset_msg_id(msg.store_host, header.commit_log_offset));
    Some(TelemetryCommand {
        status: Some(ok()),
        command: Some(Command::RecoverOrphanedTransactionCommand(
            RecoverOrphanedTransactionCommand {
                message: Some(to_proto(&session.context, &msg, &Delivery::default())),
                transaction_id,
            },
        )),
    })
}
