//! The Telemetry stream (docs/grpc.md#sessions-and-telemetry): the settings exchange
//! that opens every client's session (the client sends its settings, the broker answers
//! with `status OK` and the merged settings), and the commands the broker sends back: a transaction
//! check-back becomes `RecoverOrphanedTransactionCommand`.
//!
//! Each stream has a bounded outbound queue; a client that does not read is not
//! buffered for: the reader of its commands waits, and commands from the broker's
//! services are dropped (a check-back is asked again in the next round).

use std::pin::Pin;
use std::sync::Arc;

use futures_util::Stream;
use tokio::sync::mpsc;
use tracing::debug;
use vostok_remoting::protocol::request_code;

use super::access;
use super::client::register;
use super::context::RequestContext;
use super::convert::duration_ms;
use super::endpoint::{queue_stream, GrpcService};
use super::proto::retry_policy::Strategy;
use super::proto::settings::PubSub;
use super::proto::telemetry_command::Command;
use super::proto::{
    CustomizedBackoff, ExponentialBackoff, Metric, RetryPolicy, Settings, TelemetryCommand,
};
use super::session::CONSUMER_LONG_POLLING_MS;
use super::status::ok;
use crate::state::subscription::SubscriptionGroupConfig;
use crate::state::Broker;

/// Commands waiting for one telemetry stream's client.
const TELEMETRY_QUEUE: usize = 16;

/// Apache's proxy defaults for what it merges into the settings (`ProxyConfig`).
const PRODUCER_MAX_ATTEMPTS: i32 = 3;
const PRODUCER_BACKOFF_INITIAL_MS: i64 = 10;
const PRODUCER_BACKOFF_MAX_MS: i64 = 1000;
const PRODUCER_BACKOFF_MULTIPLIER: f32 = 2.0;
const CONSUMER_BATCH_SIZE: i32 = 32;

pub(crate) type TelemetryStream =
    Pin<Box<dyn Stream<Item = Result<TelemetryCommand, tonic::Status>> + Send>>;

/// Serves one Telemetry stream.
pub(crate) async fn telemetry(
    svc: &GrpcService,
    request: tonic::Request<tonic::Streaming<TelemetryCommand>>,
    permit: tokio::sync::OwnedSemaphorePermit,
) -> Result<tonic::Response<TelemetryStream>, tonic::Status> {
    let ctx =
        RequestContext::of(&request).map_err(|s| tonic::Status::invalid_argument(s.message))?;
    // A session needs a signed stream when ACL is on; its later RPCs are checked one
    // by one.
    let opening = (request_code::HEART_BEAT, vostok_auth::Access::Open);
    let principal = access::admitted(&svc.broker, &ctx, opening)
        .map_err(|refused| tonic::Status::unauthenticated(refused.message))?;
    // A user confined to namespaces sends settings naming only theirs.
    let confined = principal.and_then(|p| {
        let user = p.access_key().unwrap_or("-").to_owned();
        p.confinement().cloned().map(|c| (user, c))
    });
    let mut inbound = request.into_inner();
    let (tx, rx) = mpsc::channel(TELEMETRY_QUEUE);
    let broker = svc.broker.clone();
    let sessions = svc.sessions.clone();
    svc.broker.life.tasks.spawn(async move {
        let _permit = permit;
        loop {
            let next = tokio::select! {
                next = inbound.message() => next,
                _ = broker.life.shutdown.cancelled() => break,
            };
            let command = match next {
                Ok(Some(command)) => command,
                Ok(None) => break,
                Err(e) => {
                    debug!(client = %ctx.client_id, error = %e, "telemetry stream ended");
                    break;
                }
            };
            let Some(Command::Settings(settings)) = command.command else {
                // Thread stacks and verify results answer commands Vostok never sends.
                continue;
            };
            let outside = confined.as_ref().and_then(|(user, c)| {
                let names = vostok_auth::Access::Names(access::settings_names(&ctx, &settings));
                c.check(user, request_code::HEART_BEAT, &names).err()
            });
            let reply = match settings.pub_sub {
                None => Err(tonic::Status::invalid_argument(
                    "there is no publishing or subscription data in settings",
                )),
                Some(_) if outside.is_some() => Err(tonic::Status::permission_denied(
                    outside.map(|d| d.reason).unwrap_or_default(),
                )),
                Some(_) => accept_settings(&broker, &sessions, &ctx, settings, &tx)
                    .map_err(|s| tonic::Status::invalid_argument(s.message)),
            };
            let failed = reply.is_err();
            if tx.send(reply).await.is_err() || failed {
                break;
            }
        }
        if let Some(session) = sessions.get(&ctx.client_id) {
            session.detach_telemetry(&tx);
        }
    });
    Ok(tonic::Response::new(queue_stream(rx)))
}

/// Registers the client with its settings and returns the answer to send.
fn accept_settings(
    broker: &Arc<Broker>,
    sessions: &Arc<super::session::Sessions>,
    ctx: &RequestContext,
    settings: Settings,
    tx: &super::session::TelemetrySender,
) -> Result<TelemetryCommand, super::proto::Status> {
    let session = sessions.open(broker, ctx)?;
    register(broker, &session, &settings, None)?;
    session.set_settings(settings.clone());
    session.set_telemetry(tx.clone());
    Ok(TelemetryCommand {
        status: Some(ok()),
        command: Some(Command::Settings(merged(broker, ctx, &settings))),
    })
}

/// The client's settings with what the server decides merged in
/// (`GrpcClientSettingsManager.getClientSettings`).
pub(crate) fn merged(broker: &Broker, ctx: &RequestContext, raw: &Settings) -> Settings {
    let mut settings = raw.clone();
    match &mut settings.pub_sub {
        Some(PubSub::Publishing(publishing)) => {
            publishing.validate_message_type = true;
            publishing.max_body_size = broker.config.store.max_message_size as i32;
            settings.backoff_policy = Some(RetryPolicy {
                max_attempts: PRODUCER_MAX_ATTEMPTS,
                strategy: Some(Strategy::ExponentialBackoff(ExponentialBackoff {
                    initial: Some(duration_ms(PRODUCER_BACKOFF_INITIAL_MS)),
                    max: Some(duration_ms(PRODUCER_BACKOFF_MAX_MS)),
                    multiplier: PRODUCER_BACKOFF_MULTIPLIER,
                })),
            });
        }
        Some(PubSub::Subscription(subscription)) => {
            let group = ctx.name_of(subscription.group.as_ref());
            let config = broker
                .consumers
                .subscriptions
                .get(&group)
                .unwrap_or_else(|| SubscriptionGroupConfig::new(&group));
            subscription.receive_batch_size = Some(CONSUMER_BATCH_SIZE);
            subscription.long_polling_timeout = Some(duration_ms(CONSUMER_LONG_POLLING_MS));
            subscription.fifo = Some(config.consume_message_orderly);
            // The group's retry policy: the delay levels from level 3 on, the ones a
            // remoting consumer's retries wait (docs/flows.md#retry-and-dead-letter-topics).
            let next = broker
                .config
                .store
                .delay_levels()
                .unwrap_or_default()
                .iter()
                .skip(2)
                .map(|d| duration_ms(d.as_millis() as i64))
                .collect();
            settings.backoff_policy = Some(RetryPolicy {
                max_attempts: config.retry_max_times.saturating_add(1),
                strategy: Some(Strategy::CustomizedBackoff(CustomizedBackoff { next })),
            });
        }
        None => {}
    }
    settings.metric = Some(Metric {
        on: false,
        endpoints: None,
    });
    settings
}
