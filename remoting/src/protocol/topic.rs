//! Topic names, system topics, permissions and name validation (`TopicValidator`, `MixAll`,
//! `PermName`; docs/commands.md#sending, docs/bodies.md#topicroutedata,
//! docs/flows.md#retry-dead-letters-and-delays, #transaction-messages).

/// Template topic for auto-creation.
/// Prefix of the revive topic, followed by the cluster name.
pub const REVIVE_TOPIC_PREFIX: &str = "rmq_sys_REVIVE_LOG_";
pub const AUTO_CREATE_TOPIC_KEY_TOPIC: &str = "TBW102";
pub const SELF_TEST_TOPIC: &str = "SELF_TEST_TOPIC";
pub const OFFSET_MOVED_EVENT: &str = "OFFSET_MOVED_EVENT";
pub const SCHEDULE_TOPIC: &str = "SCHEDULE_TOPIC_XXXX";
pub const TRANS_HALF_TOPIC: &str = "RMQ_SYS_TRANS_HALF_TOPIC";
pub const TRANS_OP_HALF_TOPIC: &str = "RMQ_SYS_TRANS_OP_HALF_TOPIC";
pub const TRANS_CHECK_MAX_TIME_TOPIC: &str = "TRANS_CHECK_MAX_TIME_TOPIC";
/// RocketMQ 5 timer-wheel topic for arbitrary-delay messages.
pub const TIMER_TOPIC: &str = "rmq_sys_wheel_timer";
/// Where clients write message trace records unless told otherwise (docs/trace.md).
pub const TRACE_TOPIC: &str = "RMQ_SYS_TRACE_TOPIC";
/// Vostok: the durable record of messages an operator removed (docs/operations.md#removal).
pub const REMOVED_MESSAGE_TOPIC: &str = "rmq_sys_REMOVED_MESSAGE";
pub const RETRY_GROUP_TOPIC_PREFIX: &str = "%RETRY%";
pub const DLQ_GROUP_TOPIC_PREFIX: &str = "%DLQ%";
/// Separator of a namespace and a resource name (`ns%topic`).
pub const NAMESPACE_SEPARATOR: char = '%';
/// Internal consumer group of the transaction check service.
pub const CID_SYS_RMQ_TRANS: &str = "CID_RMQ_SYS_TRANS";
/// Producer group every Java client registers.
pub const CLIENT_INNER_PRODUCER_GROUP: &str = "CLIENT_INNER_PRODUCER";
pub const DEFAULT_PRODUCER_GROUP: &str = "DEFAULT_PRODUCER";
pub const DEFAULT_CONSUMER_GROUP: &str = "DEFAULT_CONSUMER";
pub const TOOLS_CONSUMER_GROUP: &str = "TOOLS_CONSUMER";
pub const MASTER_ID: i64 = 0;
/// Queues of a dead-letter topic.
pub const DLQ_NUMS_PER_GROUP: i32 = 1;

/// Longest topic name (5.x allows 255 for retry and DLQ topics).
pub const TOPIC_MAX_LENGTH: usize = 127;
pub const RETRY_TOPIC_MAX_LENGTH: usize = 255;

/// `PermName` bits.
pub mod perm {
    pub const PRIORITY: i32 = 0x8;
    pub const READ: i32 = 0x4;
    pub const WRITE: i32 = 0x2;
    pub const INHERIT: i32 = 0x1;

    pub fn is_readable(perm: i32) -> bool {
        perm & READ != 0
    }
    pub fn is_writeable(perm: i32) -> bool {
        perm & WRITE != 0
    }
    pub fn is_inherited(perm: i32) -> bool {
        perm & INHERIT != 0
    }

    /// `PermName.perm2String`: `RWX`-style text for tools.
    pub fn to_text(perm: i32) -> String {
        let mut s = String::with_capacity(3);
        s.push(if is_readable(perm) { 'R' } else { '-' });
        s.push(if is_writeable(perm) { 'W' } else { '-' });
        s.push(if is_inherited(perm) { 'X' } else { '-' });
        s
    }
}

pub fn retry_topic(group: &str) -> String {
    format!("{RETRY_GROUP_TOPIC_PREFIX}{group}")
}

pub fn dlq_topic(group: &str) -> String {
    format!("{DLQ_GROUP_TOPIC_PREFIX}{group}")
}

pub fn is_retry_topic(topic: &str) -> bool {
    topic.starts_with(RETRY_GROUP_TOPIC_PREFIX)
}

pub fn is_dlq_topic(topic: &str) -> bool {
    topic.starts_with(DLQ_GROUP_TOPIC_PREFIX)
}

/// Topics producers may not send to (docs/commands.md#sending, step 1).
pub fn is_not_allowed_send_topic(topic: &str) -> bool {
    matches!(
        topic,
        SCHEDULE_TOPIC
            | TRANS_HALF_TOPIC
            | TRANS_OP_HALF_TOPIC
            | TRANS_CHECK_MAX_TIME_TOPIC
            | SELF_TEST_TOPIC
            | OFFSET_MOVED_EVENT
            | TIMER_TOPIC
            | REMOVED_MESSAGE_TOPIC
    ) || topic.starts_with(REVIVE_TOPIC_PREFIX)
}

/// System topics the broker creates itself and hides from ordinary listings.
pub fn is_system_topic(topic: &str) -> bool {
    is_not_allowed_send_topic(topic)
        || topic == AUTO_CREATE_TOPIC_KEY_TOPIC
        || topic.starts_with("rmq_sys_")
}

/// Checks a topic name against RocketMQ's rules: characters `[%|a-zA-Z0-9_-]`,
/// at most 127 bytes (255 for retry and DLQ topics). The error is the remark to send.
pub fn validate_topic(topic: &str) -> Result<(), String> {
    if topic.trim().is_empty() {
        return Err("The specified topic is blank.".to_owned());
    }
    let max = if is_retry_topic(topic) || is_dlq_topic(topic) {
        RETRY_TOPIC_MAX_LENGTH
    } else {
        TOPIC_MAX_LENGTH
    };
    if topic.len() > max {
        return Err(format!(
            "The specified topic is longer than topic max length {max}."
        ));
    }
    if !topic
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'%' | b'|' | b'_' | b'-'))
    {
        return Err(format!(
            "The specified topic[{topic}] contains illegal characters, allowing only ^[%|a-zA-Z0-9_-]+$"
        ));
    }
    Ok(())
}

/// Group names follow the same character rules, at most 255 bytes.
pub fn validate_group(group: &str) -> Result<(), String> {
    if group.trim().is_empty() {
        return Err("the specified group is blank".to_owned());
    }
    if group.len() > 255 {
        return Err("the specified group is longer than group max length 255.".to_owned());
    }
    if !group
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'%' | b'|' | b'_' | b'-'))
    {
        return Err(format!(
            "the specified group[{group}] contains illegal characters, allowing only ^[%|a-zA-Z0-9_-]+$"
        ));
    }
    Ok(())
}

/// `ns%name` for a non-empty namespace, as the Java client's `NamespaceUtil.wrapNamespace`;
/// retry and DLQ prefixes stay in front (`%RETRY%ns%group`).
pub fn wrap_namespace(namespace: &str, resource: &str) -> String {
    if namespace.is_empty()
        || is_system_topic(resource)
        || resource.starts_with(&format!("{namespace}%"))
        || without_retry_dlq(resource).starts_with(&format!("{namespace}%"))
    {
        return resource.to_owned();
    }
    for prefix in [RETRY_GROUP_TOPIC_PREFIX, DLQ_GROUP_TOPIC_PREFIX] {
        if let Some(rest) = resource.strip_prefix(prefix) {
            return format!("{prefix}{namespace}%{rest}");
        }
    }
    format!("{namespace}%{resource}")
}

/// The namespace a topic or group name (or a retry or DLQ topic) is in, if any: `ns`
/// for `ns%orders`, `%RETRY%ns%g` and `%DLQ%ns%g`.
pub fn namespace_of(resource: &str) -> Option<&str> {
    without_retry_dlq(resource)
        .split_once('%')
        .map(|(ns, _)| ns)
        .filter(|ns| !ns.is_empty())
}

/// The inverse of [`wrap_namespace`].
pub fn unwrap_namespace(namespace: &str, resource: &str) -> String {
    if namespace.is_empty() {
        return resource.to_owned();
    }
    let wrapped = format!("{namespace}%");
    for prefix in [RETRY_GROUP_TOPIC_PREFIX, DLQ_GROUP_TOPIC_PREFIX] {
        if let Some(rest) = resource.strip_prefix(prefix) {
            if let Some(name) = rest.strip_prefix(&wrapped) {
                return format!("{prefix}{name}");
            }
        }
    }
    resource
        .strip_prefix(&wrapped)
        .map(str::to_owned)
        .unwrap_or_else(|| resource.to_owned())
}

fn without_retry_dlq(resource: &str) -> &str {
    resource
        .strip_prefix(RETRY_GROUP_TOPIC_PREFIX)
        .or_else(|| resource.strip_prefix(DLQ_GROUP_TOPIC_PREFIX))
        .unwrap_or(resource)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn validates_names_as_rocketmq_does() {
        assert!(validate_topic("TopicTest").is_ok());
        assert!(validate_topic("%RETRY%group_1-a|b").is_ok());
        assert!(validate_topic("").is_err());
        assert!(validate_topic("a b").is_err());
        assert!(validate_topic("topic.with.dots").is_err());
        assert!(validate_topic(&"t".repeat(127)).is_ok());
        assert!(validate_topic(&"t".repeat(128)).is_err());
        assert!(validate_topic(&format!("%RETRY%{}", "g".repeat(200))).is_ok());
    }

    #[test]
    fn namespaces_wrap_and_unwrap() {
        assert_eq!(wrap_namespace("ns", "orders"), "ns%orders");
        assert_eq!(wrap_namespace("ns", "ns%orders"), "ns%orders");
        assert_eq!(wrap_namespace("ns", "%RETRY%cg"), "%RETRY%ns%cg");
        assert_eq!(wrap_namespace("", "orders"), "orders");
        assert_eq!(unwrap_namespace("ns", "ns%orders"), "orders");
        assert_eq!(unwrap_namespace("ns", "%RETRY%ns%cg"), "%RETRY%cg");
        assert_eq!(unwrap_namespace("ns", "other%orders"), "other%orders");
    }

    #[test]
    fn perm_text() {
        assert_eq!(perm::to_text(6), "RW-");
        assert_eq!(perm::to_text(7), "RWX");
    }
}
