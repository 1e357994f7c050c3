//! Topic requests: the topic list and routes (name servers), creating, updating and
//! deleting topics (brokers, then name servers), and the offsets of a topic's queues.

use vostok_remoting::protocol::body::{MessageQueue, TopicConfig, TopicList, TopicStatsTable};
use vostok_remoting::protocol::header::{
    CreateTopicRequestHeader, DeleteTopicFromNamesrvRequestHeader, TopicRequestHeader,
};
use vostok_remoting::protocol::route::TopicRouteData;
use vostok_remoting::protocol::topic::AUTO_CREATE_TOPIC_KEY_TOPIC;
use vostok_remoting::protocol::{json, request_code, response_code};
use vostok_remoting::RemotingCommand;

use super::AdminClient;
use crate::api;
use crate::error::{ClientError, Result};

impl AdminClient {
    /// GET_ALL_TOPIC_LIST_FROM_NAMESERVER (`fetchAllTopicList`).
    pub async fn fetch_all_topic_list(&self) -> Result<TopicList> {
        self.invoke_namesrv(|admin, addr| {
            Box::pin(async move {
                let code = request_code::GET_ALL_TOPIC_LIST_FROM_NAMESERVER;
                let response = admin.call(addr, RemotingCommand::request(code)).await?;
                Ok(json::from_slice("TopicList", &response.body)?)
            })
        })
        .await
    }

    /// GET_ROUTEINFO_BY_TOPIC (`examineTopicRouteInfo`), as producers and consumers ask
    /// it. A topic the name server does not know is an error here:
    /// [`ClientError::Broker`] with TOPIC_NOT_EXIST and that name server's address.
    pub async fn examine_topic_route_info(&self, topic: &str) -> Result<TopicRouteData> {
        let topic = topic.to_owned();
        self.invoke_namesrv(|admin, addr| {
            let topic = topic.clone();
            Box::pin(async move {
                api::get_topic_route(&admin.remoting, addr, &topic, admin.timeout)
                    .await?
                    .ok_or_else(|| {
                        ClientError::broker(
                            addr,
                            response_code::TOPIC_NOT_EXIST,
                            &format!("No topic route info in name server for the topic: {topic}"),
                        )
                    })
            })
        })
        .await
    }

    /// UPDATE_AND_CREATE_TOPIC (`createAndUpdateTopicConfig`) on one broker; the broker
    /// registers the change with the name servers itself.
    pub async fn create_and_update_topic_config(
        &self,
        broker_addr: &str,
        config: &TopicConfig,
    ) -> Result<()> {
        let attributes = (!config.attributes.is_empty()).then(|| {
            config
                .attributes
                .iter()
                .map(|(k, v)| format!("{k}={v}"))
                .collect::<Vec<_>>()
                .join(",")
        });
        let header = CreateTopicRequestHeader {
            topic: config.topic_name.clone(),
            default_topic: AUTO_CREATE_TOPIC_KEY_TOPIC.to_owned(),
            read_queue_nums: config.read_queue_nums,
            write_queue_nums: config.write_queue_nums,
            perm: config.perm,
            topic_filter_type: config.topic_filter_type.name().to_owned(),
            topic_sys_flag: Some(config.topic_sys_flag),
            order: Some(config.order),
            attributes,
            force: None,
        };
        let request =
            RemotingCommand::request_with_header(request_code::UPDATE_AND_CREATE_TOPIC, &header);
        self.call(broker_addr, request).await.map(drop)
    }

    /// DELETE_TOPIC_IN_BROKER (`deleteTopicInBroker`): the topic's config, queues and
    /// offsets on one broker.
    pub async fn delete_topic_in_broker(&self, broker_addr: &str, topic: &str) -> Result<()> {
        let header = TopicRequestHeader {
            topic: topic.to_owned(),
        };
        let request =
            RemotingCommand::request_with_header(request_code::DELETE_TOPIC_IN_BROKER, &header);
        self.call(broker_addr, request).await.map(drop)
    }

    /// DELETE_TOPIC_IN_NAMESRV (`deleteTopicInNameServer`) on every name server, in
    /// order; the first failure ends it. With `cluster`, only that cluster's route is
    /// removed.
    pub async fn delete_topic_in_namesrv(&self, topic: &str, cluster: Option<&str>) -> Result<()> {
        let header = DeleteTopicFromNamesrvRequestHeader {
            topic: topic.to_owned(),
            cluster_name: cluster.map(str::to_owned),
        };
        for addr in &self.namesrv {
            let request = RemotingCommand::request_with_header(
                request_code::DELETE_TOPIC_IN_NAMESRV,
                &header,
            );
            self.call(addr, request).await?;
        }
        Ok(())
    }

    /// GET_TOPIC_STATS_INFO (`examineTopicStats`) of one broker: min and max offset and
    /// last update time of each of the topic's queues there.
    pub async fn examine_topic_stats(
        &self,
        broker_addr: &str,
        topic: &str,
    ) -> Result<TopicStatsTable> {
        let header = TopicRequestHeader {
            topic: topic.to_owned(),
        };
        let request =
            RemotingCommand::request_with_header(request_code::GET_TOPIC_STATS_INFO, &header);
        let response = self.call(broker_addr, request).await?;
        Ok(TopicStatsTable::decode(&response.body)?)
    }

    /// GET_MAX_OFFSET (`maxOffset`): the offset the queue's next message will get.
    pub async fn max_offset(&self, broker_addr: &str, mq: &MessageQueue) -> Result<i64> {
        api::get_max_offset(&self.remoting, broker_addr, mq, self.timeout).await
    }

    /// GET_MIN_OFFSET (`minOffset`): the offset of the queue's oldest stored message.
    pub async fn min_offset(&self, broker_addr: &str, mq: &MessageQueue) -> Result<i64> {
        api::get_min_offset(&self.remoting, broker_addr, mq, self.timeout).await
    }

    /// GET_ALL_TOPIC_CONFIG (`getAllTopicConfig`): the broker's topic table, as in its
    /// `config/topics.json`.
    pub async fn get_all_topic_config(
        &self,
        broker_addr: &str,
    ) -> Result<vostok_remoting::protocol::body::TopicConfigSerializeWrapper> {
        let request = RemotingCommand::request(request_code::GET_ALL_TOPIC_CONFIG);
        let response = self.call(broker_addr, request).await?;
        Ok(json::from_slice(
            "TopicConfigSerializeWrapper",
            &response.body,
        )?)
    }
}
