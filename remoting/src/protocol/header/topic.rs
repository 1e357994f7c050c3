//! Topic administration: docs/commands.md#topic-administration and the name-server topic
//! calls.

use crate::command_header;

command_header! {
    pub struct CreateTopicRequestHeader {
        topic: String = "topic",
        default_topic: String = "defaultTopic",
        read_queue_nums: i32 = "readQueueNums",
        write_queue_nums: i32 = "writeQueueNums",
        perm: i32 = "perm",
        /// `SINGLE_TAG` or `MULTI_TAG`.
        topic_filter_type: String = "topicFilterType",
        topic_sys_flag: Option<i32> = "topicSysFlag",
        order: Option<bool> = "order",
        attributes: Option<String> = "attributes",
        force: Option<bool> = "force",
    }
}

command_header! {
    /// DELETE_TOPIC_IN_BROKER and GET_TOPIC_STATS_INFO.
    pub struct TopicRequestHeader {
        topic: String = "topic",
    }
}

command_header! {
    pub struct DeleteTopicFromNamesrvRequestHeader {
        topic: String = "topic",
        cluster_name: Option<String> = "clusterName",
    }
}

command_header! {
    pub struct GetTopicsByClusterRequestHeader {
        cluster: String = "cluster",
    }
}
