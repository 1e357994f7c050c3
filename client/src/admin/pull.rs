//! Reading queues as the operator tools do (Java's tool pull consumer in group
//! `TOOLS_CONSUMER`): a pull that commits nothing and is not held by the broker, and
//! the offset of a queue at a time.

use vostok_remoting::protocol::body::MessageQueue;
use vostok_remoting::protocol::header::{PullMessageRequestHeader, PULL_FLAG_SUBSCRIPTION};
use vostok_remoting::protocol::topic::TOOLS_CONSUMER_GROUP;

use super::AdminClient;
use crate::api::{self, PullResult};
use crate::error::Result;
use crate::message::decompress_in_place;

/// Whether `tags` matches a tag expression (`*`, `TagA || TagB`).
fn tag_matches(expression: &str, tags: Option<&str>) -> bool {
    let expression = expression.trim();
    if expression.is_empty() || expression == "*" {
        return true;
    }
    let Some(tags) = tags else {
        return false;
    };
    expression.split("||").any(|t| t.trim() == tags)
}

impl AdminClient {
    /// PULL_MESSAGE of up to `max_nums` messages of `mq` from `offset` for `group`
    /// (`None`: `TOOLS_CONSUMER`), keeping those whose tag matches `sub_expression` (the
    /// broker filters by tag hash only), bodies decompressed. Nothing is committed and
    /// the broker does not hold the request.
    pub async fn pull(
        &self,
        broker_addr: &str,
        group: Option<&str>,
        mq: &MessageQueue,
        sub_expression: &str,
        offset: i64,
        max_nums: i32,
    ) -> Result<PullResult> {
        let header = PullMessageRequestHeader {
            consumer_group: group.unwrap_or(TOOLS_CONSUMER_GROUP).to_owned(),
            topic: mq.topic.clone(),
            queue_id: mq.queue_id,
            queue_offset: offset,
            max_msg_nums: max_nums,
            sys_flag: PULL_FLAG_SUBSCRIPTION,
            commit_offset: 0,
            suspend_timeout_millis: 0,
            subscription: Some(sub_expression.to_owned()),
            sub_version: 0,
            expression_type: Some("TAG".to_owned()),
            max_msg_bytes: None,
            broker_name: Some(mq.broker_name.clone()),
        };
        let mut result =
            api::pull_message(&self.remoting, broker_addr, &header, self.timeout).await?;
        result
            .messages
            .retain(|m| tag_matches(sub_expression, m.tags()));
        for m in &mut result.messages {
            decompress_in_place(m);
        }
        Ok(result)
    }

    /// SEARCH_OFFSET_BY_TIMESTAMP (`searchOffset`): the queue offset of the first
    /// message stored at or after `timestamp` (ms since the epoch).
    pub async fn search_offset(
        &self,
        broker_addr: &str,
        mq: &MessageQueue,
        timestamp: i64,
    ) -> Result<i64> {
        api::search_offset(&self.remoting, broker_addr, mq, timestamp, self.timeout).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tag_expressions() {
        assert!(tag_matches("*", None));
        assert!(tag_matches("", Some("A")));
        assert!(tag_matches("A || B", Some("B")));
        assert!(!tag_matches("A || B", Some("C")));
        assert!(!tag_matches("A", None));
    }
}
