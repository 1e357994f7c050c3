//! Transactional messages (Java `TransactionMQProducer`,
//! docs/flows.md#transaction-messages).
//!
//! 1. The half message is sent with `TRAN_MSG=true`, `PGROUP` and the PREPARED sysFlag.
//! 2. Once it is stored, the local transaction runs
//!    ([`TransactionListener::execute_local_transaction`]).
//! 3. END_TRANSACTION (oneway) commits, rolls back or leaves it unknown.
//! 4. For unknown outcomes the broker later sends CHECK_TRANSACTION_STATE; the
//!    listener's [`TransactionListener::check_local_transaction`] answers, again with
//!    END_TRANSACTION.

use std::sync::Arc;

use tracing::{debug, warn};
use vostok_remoting::protocol::header::{
    CheckTransactionStateRequestHeader, EndTransactionRequestHeader,
};
use vostok_remoting::protocol::message::id::decode_offset_msg_id;
use vostok_remoting::protocol::message::{property, sysflag, MessageExt};
use vostok_remoting::protocol::topic;

use super::send_result::{SendResult, SendStatus};
use super::{Producer, ProducerConfig, ProducerShared};
use crate::api;
use crate::error::{ClientError, Result};
use crate::message::Message;
use crate::trace::hook::{end_transaction_record, EndTransactionContext};

/// Outcome of a local transaction (Java `LocalTransactionState`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum LocalTransactionState {
    CommitMessage,
    RollbackMessage,
    Unknown,
}

impl LocalTransactionState {
    /// The `commitOrRollback` value of END_TRANSACTION.
    pub fn commit_or_rollback(self) -> i32 {
        match self {
            LocalTransactionState::CommitMessage => sysflag::TRANSACTION_COMMIT_TYPE,
            LocalTransactionState::RollbackMessage => sysflag::TRANSACTION_ROLLBACK_TYPE,
            LocalTransactionState::Unknown => sysflag::TRANSACTION_NOT_TYPE,
        }
    }

    /// Java's enum constant name (`UNKNOW` is Java's spelling).
    pub fn name(self) -> &'static str {
        match self {
            LocalTransactionState::CommitMessage => "COMMIT_MESSAGE",
            LocalTransactionState::RollbackMessage => "ROLLBACK_MESSAGE",
            LocalTransactionState::Unknown => "UNKNOW",
        }
    }
}

/// The application's side of a transaction. `check_local_transaction` runs on a
/// blocking thread, so it may query a database synchronously.
pub trait TransactionListener: Send + Sync + 'static {
    /// Runs after the half message is stored; `msg.transaction_id` is set.
    fn execute_local_transaction(&self, msg: &Message) -> LocalTransactionState;
    /// Answers the broker's check about a half message still unresolved.
    fn check_local_transaction(&self, msg: &MessageExt) -> LocalTransactionState;
}

/// Result of [`TransactionProducer::send_message_in_transaction`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TransactionSendResult {
    pub send_result: SendResult,
    pub local_transaction_state: LocalTransactionState,
}

/// A producer that sends transactional messages.
///
/// ```no_run
/// # use vostok_client::*;
/// struct Orders;
/// impl TransactionListener for Orders {
///     fn execute_local_transaction(&self, _msg: &Message) -> LocalTransactionState {
///         LocalTransactionState::CommitMessage
///     }
///     fn check_local_transaction(&self, _msg: &MessageExt) -> LocalTransactionState {
///         LocalTransactionState::CommitMessage
///     }
/// }
/// # async fn demo() -> Result<()> {
/// let producer = TransactionProducer::new(ProducerConfig::new("tx_group", "127.0.0.1:9876"), std::sync::Arc::new(Orders));
/// producer.start().await?;
/// let r = producer.send_message_in_transaction(Message::new("Orders", "paid")).await?;
/// println!("{:?}", r.local_transaction_state);
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct TransactionProducer {
    producer: Producer,
}

impl TransactionProducer {
    pub fn new(config: ProducerConfig, listener: Arc<dyn TransactionListener>) -> Self {
        let producer = Producer::new(config);
        let _ = producer.shared.transaction_listener.set(listener);
        TransactionProducer { producer }
    }

    pub async fn start(&self) -> Result<()> {
        self.producer.start().await
    }

    pub async fn shutdown(&self) {
        self.producer.shutdown().await
    }

    /// The plain producer behind it, for non-transactional sends.
    pub fn producer(&self) -> &Producer {
        &self.producer
    }

    /// Sends a half message, runs the local transaction and ends it.
    pub async fn send_message_in_transaction(&self, msg: Message) -> Result<TransactionSendResult> {
        let listener = self
            .producer
            .shared
            .transaction_listener
            .get()
            .cloned()
            .ok_or_else(|| ClientError::InvalidArgument("no transaction listener".into()))?;
        self.send_with_executor(msg, |m| listener.execute_local_transaction(m))
            .await
    }

    /// As [`Self::send_message_in_transaction`], with a local transaction given per call
    /// (Java's `arg`): `execute` replaces the listener's `execute_local_transaction`.
    pub async fn send_with_executor<F>(
        &self,
        mut msg: Message,
        execute: F,
    ) -> Result<TransactionSendResult>
    where
        F: FnOnce(&Message) -> LocalTransactionState,
    {
        let shared = &self.producer.shared;
        msg.properties.remove(property::DELAY_TIME_LEVEL);
        msg.properties
            .insert(property::TRANSACTION_PREPARED, "true");
        msg.properties
            .insert(property::PRODUCER_GROUP, shared.group.clone());
        let send_result = self.producer.send(msg.clone()).await?;
        let state = match send_result.send_status {
            SendStatus::SendOk => {
                let id = send_result
                    .transaction_id
                    .clone()
                    .unwrap_or_else(|| send_result.msg_id.clone());
                if let Some(tid) = &send_result.transaction_id {
                    msg.properties.insert(property::TRANSACTION_ID, tid.clone());
                }
                msg.properties.insert(
                    property::UNIQ_CLIENT_MESSAGE_ID_KEYIDX,
                    send_result.msg_id.clone(),
                );
                msg.transaction_id = Some(id);
                execute(&msg)
            }
            _ => LocalTransactionState::RollbackMessage,
        };
        match end_transaction(shared, &send_result, state).await {
            Ok(broker_addr) => trace_end(shared, &msg, &broker_addr, &send_result, state),
            Err(e) => {
                warn!(msg_id = %send_result.msg_id, error = %e, "END_TRANSACTION failed; the broker will check back")
            }
        }
        Ok(TransactionSendResult {
            send_result,
            local_transaction_state: state,
        })
    }
}

/// The EndTransaction trace record, when tracing is on.
fn trace_end(
    shared: &ProducerShared,
    msg: &Message,
    broker_addr: &str,
    result: &SendResult,
    state: LocalTransactionState,
) {
    let Some(trace) = shared.trace.get() else {
        return;
    };
    let record = end_transaction_record(&EndTransactionContext {
        namespace: shared.namespace(),
        producer_group: &shared.group,
        message: msg,
        broker_addr,
        msg_id: &result.msg_id,
        transaction_id: result.transaction_id.as_deref().unwrap_or(&result.msg_id),
        state: state.name(),
        from_transaction_check: false,
    });
    trace.append(record);
}

/// Sends END_TRANSACTION; returns the broker's address.
async fn end_transaction(
    shared: &ProducerShared,
    result: &SendResult,
    state: LocalTransactionState,
) -> Result<String> {
    let instance = shared.instance()?;
    let (_, commit_log_offset) = decode_offset_msg_id(&result.offset_msg_id)?;
    let broker = &result.message_queue.broker_name;
    let addr = instance
        .find_broker_addr_in_publish(broker)
        .ok_or_else(|| ClientError::NoBroker {
            topic: result.message_queue.topic.clone(),
            broker_name: broker.clone(),
        })?;
    let header = EndTransactionRequestHeader {
        producer_group: shared.group.clone(),
        tran_state_table_offset: result.queue_offset,
        commit_log_offset,
        commit_or_rollback: state.commit_or_rollback(),
        from_transaction_check: Some(false),
        msg_id: result.msg_id.clone(),
        transaction_id: result
            .transaction_id
            .clone()
            .or_else(|| Some(result.msg_id.clone())),
        topic: Some(shared.wrap(&result.message_queue.topic)),
    };
    api::end_transaction(
        instance.remoting(),
        &addr,
        &header,
        None,
        shared.config.send_msg_timeout,
    )
    .await?;
    Ok(addr.to_string())
}

/// Serves CHECK_TRANSACTION_STATE: runs the listener on a blocking thread and answers
/// with END_TRANSACTION `fromTransactionCheck=true` to the broker that asked.
pub(crate) fn check_transaction_state(
    shared: &ProducerShared,
    broker_addr: String,
    mut msg: MessageExt,
    header: CheckTransactionStateRequestHeader,
) {
    let Some(listener) = shared.transaction_listener.get().cloned() else {
        debug!(group = %shared.group, "transaction check for a producer without listener");
        return;
    };
    let Ok(instance) = shared.instance().cloned() else {
        return;
    };
    let group = shared.group.clone();
    let timeout = shared.config.send_msg_timeout;
    msg.topic = topic::unwrap_namespace(&shared.config.client.namespace, &msg.topic);
    instance.clone().tracker().spawn(async move {
        let unique_key = msg
            .properties
            .uniq_key()
            .map(str::to_owned)
            .unwrap_or_else(|| msg.msg_id());
        let state =
            match tokio::task::spawn_blocking(move || listener.check_local_transaction(&msg)).await
            {
                Ok(state) => state,
                Err(e) => {
                    warn!(error = %e, "transaction check listener panicked; answering UNKNOWN");
                    LocalTransactionState::Unknown
                }
            };
        let end = EndTransactionRequestHeader {
            producer_group: group,
            tran_state_table_offset: header.tran_state_table_offset,
            commit_log_offset: header.commit_log_offset,
            commit_or_rollback: state.commit_or_rollback(),
            from_transaction_check: Some(true),
            msg_id: unique_key,
            transaction_id: header.transaction_id.clone(),
            topic: header.topic.clone(),
        };
        if let Err(e) =
            api::end_transaction(instance.remoting(), &broker_addr, &end, None, timeout).await
        {
            warn!(broker = %broker_addr, error = %e, "END_TRANSACTION after check failed");
        }
    });
}
