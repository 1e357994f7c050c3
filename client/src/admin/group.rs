//! Subscription groups on a broker (create or update, delete) and who in a producer
//! group is online.

use serde::Deserialize;
use vostok_remoting::protocol::body::{Connection, SubscriptionGroupConfig};
use vostok_remoting::protocol::header::GetProducerConnectionListRequestHeader;
use vostok_remoting::protocol::{json, request_code};
use vostok_remoting::RemotingCommand;

use super::AdminClient;
use crate::error::Result;

/// GET_PRODUCER_CONNECTION_LIST's body (Java `ProducerConnection`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ProducerConnection {
    #[serde(default)]
    pub connection_set: Vec<Connection>,
}

impl AdminClient {
    /// UPDATE_AND_CREATE_SUBSCRIPTIONGROUP (`createAndUpdateSubscriptionGroupConfig`).
    pub async fn create_and_update_subscription_group_config(
        &self,
        broker_addr: &str,
        config: &SubscriptionGroupConfig,
    ) -> Result<()> {
        let request = RemotingCommand::request(request_code::UPDATE_AND_CREATE_SUBSCRIPTIONGROUP)
            .with_body(json::to_vec(config));
        self.call(broker_addr, request).await.map(drop)
    }

    /// DELETE_SUBSCRIPTIONGROUP (`deleteSubscriptionGroup`); with `clean_offset` the
    /// broker also drops the group's committed offsets.
    pub async fn delete_subscription_group(
        &self,
        broker_addr: &str,
        group: &str,
        clean_offset: bool,
    ) -> Result<()> {
        let mut request = RemotingCommand::request(request_code::DELETE_SUBSCRIPTIONGROUP);
        request.ext_fields.insert("groupName", group);
        request
            .ext_fields
            .insert("cleanOffset", clean_offset.to_string());
        self.call(broker_addr, request).await.map(drop)
    }

    /// GET_PRODUCER_CONNECTION_LIST (`examineProducerConnectionInfo`) of one broker.
    pub async fn examine_producer_connection_info(
        &self,
        broker_addr: &str,
        group: &str,
    ) -> Result<ProducerConnection> {
        let header = GetProducerConnectionListRequestHeader {
            producer_group: group.to_owned(),
        };
        let request = RemotingCommand::request_with_header(
            request_code::GET_PRODUCER_CONNECTION_LIST,
            &header,
        );
        let response = self.call(broker_addr, request).await?;
        Ok(json::from_slice("ProducerConnection", &response.body)?)
    }

    /// GET_ALL_SUBSCRIPTIONGROUP_CONFIG (`getAllSubscriptionGroup`): the broker's
    /// subscription groups, as in its `config/subscriptionGroup.json`.
    pub async fn get_all_subscription_group(
        &self,
        broker_addr: &str,
    ) -> Result<vostok_remoting::protocol::body::SubscriptionGroupWrapper> {
        let request = RemotingCommand::request(request_code::GET_ALL_SUBSCRIPTIONGROUP_CONFIG);
        let response = self.call(broker_addr, request).await?;
        Ok(json::from_slice(
            "SubscriptionGroupWrapper",
            &response.body,
        )?)
    }
}
