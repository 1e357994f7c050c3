//! What a stored message belongs to, for the ACL (docs/security.md#request-table):
//! requests that point at a message by its commitlog offset (END_TRANSACTION,
//! VIEW_MESSAGE_BY_ID, CONSUMER_SEND_MSG_BACK and the gRPC calls that stand for them)
//! need their permission on the topic the message was sent to, read from the store,
//! whatever topic the request names.

use vostok_auth::Resource;
use vostok_remoting::protocol::message::property;
use vostok_remoting::protocol::message::record::RecordView;
use vostok_remoting::protocol::pop::pop_retry_topic;

use vostok_store::MessageStore;

use crate::reroute;

/// The resources of the message stored at `offset`: the topic it was sent to (a
/// parked message's real topic; a retry topic is its group's). When the request acts
/// for `group`, a message of that group's POP retry topic (`%RETRY%<group>_<topic>`,
/// `+` in v2) belongs to the topic it retries and the group. `None` when no message
/// starts at `offset`.
pub(crate) fn stored_message_resources(
    store: &MessageStore,
    offset: i64,
    group: Option<&str>,
) -> Option<Vec<Resource<'static>>> {
    let raw = store.select_one_message_by_offset(offset)?;
    let view = RecordView::parse_message(&raw, false).ok()?;
    Some(resources_of(
        view.topic(),
        view.property(property::REAL_TOPIC),
        view.property(property::RETRY_TOPIC),
        group,
    ))
}

/// [`stored_message_resources`] from a record's topic, `REAL_TOPIC` and
/// `RETRY_TOPIC`.
fn resources_of(
    stored: &str,
    real_topic: Option<&str>,
    retry_topic: Option<&str>,
    group: Option<&str>,
) -> Vec<Resource<'static>> {
    let topic = reroute::topic_of(stored, real_topic);
    if let (Some(group), Some(original)) = (group.filter(|g| !g.is_empty()), retry_topic) {
        if [false, true]
            .iter()
            .any(|v2| topic == pop_retry_topic(original, group, *v2))
        {
            return vec![
                Resource::topic(original).into_owned(),
                Resource::group(group).into_owned(),
            ];
        }
    }
    vec![Resource::topic(topic).into_owned()]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stored_message_belongs_to_its_real_topic() {
        let topic = |t: &str| Resource::topic(t).into_owned();
        let group = |g: &str| Resource::group(g).into_owned();
        assert_eq!(resources_of("T", None, None, None), [topic("T")]);
        // Parked: the real topic; a client's REAL_TOPIC elsewhere means nothing.
        for parked in [
            "RMQ_SYS_TRANS_HALF_TOPIC",
            "SCHEDULE_TOPIC_XXXX",
            "rmq_sys_wheel_timer",
        ] {
            assert_eq!(resources_of(parked, Some("T"), None, None), [topic("T")]);
        }
        assert_eq!(resources_of("T", Some("Other"), None, None), [topic("T")]);
        // A group's retry topic is the group's, whatever its name looks like.
        for g in [None, Some("svc_orders")] {
            assert_eq!(
                resources_of("%RETRY%svc_orders", None, Some("orders"), g),
                [group("svc_orders")]
            );
        }
        // The POP retry topic of the group named: the topic retried and the group.
        assert_eq!(
            resources_of("%RETRY%G_x_T", None, Some("T"), Some("G_x")),
            [topic("T"), group("G_x")]
        );
        assert_eq!(
            resources_of(
                "SCHEDULE_TOPIC_XXXX",
                Some("%RETRY%G+T"),
                Some("T"),
                Some("G")
            ),
            [topic("T"), group("G")]
        );
        assert_eq!(
            resources_of("%RETRY%G+T", None, Some("T"), Some("H")),
            [group("G+T")]
        );
    }
}
