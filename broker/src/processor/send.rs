//! SEND_MESSAGE, SEND_MESSAGE_V2 and SEND_BATCH_MESSAGE (docs/commands.md#sending): the
//! header decoded into a typed send for `crate::ops::send`, its outcome encoded back.

use std::borrow::Cow;

use vostok_remoting::protocol::header::SendHeaderView;
use vostok_remoting::protocol::message::property;
use vostok_remoting::protocol::topic;
use vostok_remoting::protocol::version;
use vostok_remoting::support::latency_trace;
use vostok_remoting::{Channel, RemotingCommand};

use super::put_response::send_response;
use crate::ops::send::{self as op, Destination, SendRequest, SendTables};
use crate::ops::send_batch::{send_batch, BatchRequest};
use crate::ops::Client;
use crate::state::Broker;

pub(crate) async fn send_message(
    broker: &Broker,
    channel: &Channel,
    request: RemotingCommand,
) -> RemotingCommand {
    let received = latency_trace::enabled().then(latency_trace::now_micros);
    // Read in place: only the topic and the property string are copied out.
    let header = match SendHeaderView::decode(request.code, &request.ext_fields) {
        Ok(h) => h,
        Err(e) => return super::header_error(&request, e),
    };
    if header.is_batch() {
        let batch = BatchRequest {
            to: destination(&header),
            sys_flag: header.sys_flag,
            born_timestamp: header.born_timestamp,
            reconsume_times: header.reconsume_times.unwrap_or(0),
            body: request.body,
            received,
        };
        let outcome = send_batch(SendTables::of(broker), Client::on(channel), batch).await;
        return send_response(broker, outcome);
    }
    let send = SendRequest {
        to: destination(&header),
        sys_flag: header.sys_flag,
        born_timestamp: header.born_timestamp,
        flag: header.flag,
        properties: properties_with_room(broker, header.properties.unwrap_or_default()),
        body: request.body,
        reconsume_times: header.reconsume_times.unwrap_or(0),
        // Clients before 3.4.9 do not set their own retry limit.
        max_reconsume_times: header
            .max_reconsume_times
            .filter(|_| request.version >= version::V3_4_9),
        received,
    };
    send_response(
        broker,
        op::send(SendTables::of(broker), Client::on(channel), send).await,
    )
}

/// The property string, with room for the `CLUSTER` pair the send adds, so that
/// adding it does not grow the string again.
fn properties_with_room(broker: &Broker, properties: &str) -> String {
    let cluster = property::CLUSTER.len() + broker.config.broker_cluster_name.len() + 2;
    let mut owned = String::with_capacity(properties.len() + cluster);
    owned.push_str(properties);
    owned
}

/// Where a send header sends to.
pub(super) fn destination(header: &SendHeaderView<'_>) -> Destination {
    Destination {
        topic: header.topic.to_owned(),
        default_topic: if header.default_topic == topic::AUTO_CREATE_TOPIC_KEY_TOPIC {
            Cow::Borrowed(topic::AUTO_CREATE_TOPIC_KEY_TOPIC)
        } else {
            Cow::Owned(header.default_topic.to_owned())
        },
        default_topic_queue_nums: header.default_topic_queue_nums,
        queue_id: header.queue_id,
        unit_mode: header.unit_mode.unwrap_or(false),
    }
}
