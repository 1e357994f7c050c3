//! The admin layer (Java `MQAdminExt`, `DefaultMQAdminExt`): the requests an operator
//! tool makes to name servers and brokers, one method each on [`AdminClient`], grouped
//! by concern:
//!
//! * [`cluster`]: `examineBrokerClusterInfo`, `fetchBrokerRuntimeStats`.
//! * [`topic`]: `fetchAllTopicList`, `examineTopicRouteInfo`,
//!   `createAndUpdateTopicConfig`, `deleteTopicInBroker`, `deleteTopicInNameServer`,
//!   `examineTopicStats`, `maxOffset`, `minOffset`.
//! * [`consumer`]: `examineConsumeStats`, `examineConsumerConnectionInfo`,
//!   `queryConsumerOffset`.
//! * [`message`]: `queryMessage` (by key or unique key), `viewMessage` (by commitlog
//!   offset).
//! * [`group`]: `createAndUpdateSubscriptionGroupConfig`, `deleteSubscriptionGroup`,
//!   `examineProducerConnectionInfo`.
//! * [`config`]: `getBrokerConfig`, `updateBrokerConfig`, `getNameServerConfig`,
//!   `updateNameServerConfig`, `getKVConfig`, `createAndUpdateKvConfig`,
//!   `deleteKvConfig`, `wipeWritePermOfBroker`, `addWritePermOfBroker`,
//!   `getControllerConfig`, `updateControllerConfig`.
//! * [`broker_ops`]: `resetOffsetByTimestamp`, `cleanExpiredConsumerQueue`,
//!   `deleteExpiredCommitLog`.
//! * [`stats`]: `queryTopicConsumeByWho`, `viewBrokerStatsData`.
//! * [`pull`]: `pull` (the tools' pull consumer), `searchOffset`.
//! * [`controller`]: controller mode: `getControllerMetaData`, `getInSyncStateData`,
//!   `electMaster`.
//! * [`auth`]: ACL 2.0 users and ACLs (`createUser` … `listAcl`, codes 3001–3010).
//! * [`plain_acl`]: ACL 1.0 accounts and white addresses (codes 50–53).
//! * [`inspect`]: a broker's own state: `fetchConsumeStatsInBroker`,
//!   `examineSubscriptionGroupConfig`, `examineTopicConfig`, `queryConsumeQueue`,
//!   `getBrokerHAStatus`, `getBrokerEpochCache`, `resetMasterFlushOffset`,
//!   `cleanUnusedTopicByAddr`, `setMessageRequestMode`, `getConsumeStatus`.
//!
//! Calls the producers and consumers also make (routes, offsets) go through the same
//! `api` functions they use; records are decoded by the one record codec of
//! `vostok_remoting::protocol::message`, as pulls are. Every failure is a
//! [`ClientError`]: a non-success answer is [`ClientError::Broker`] with its code and
//! remark, so a caller can treat an expected code (REQUEST_CODE_NOT_SUPPORTED from a
//! broker without an optional request, CONSUMER_NOT_ONLINE) as an outcome.
//!
//! Unlike producers and consumers, an admin client has no background timers and no
//! shared client instance: it owns its connections and closes them on
//! [`AdminClient::shutdown`]. Every call is bounded by `mq_client_api_timeout`.

pub mod auth;
pub mod broker_ops;
pub mod cluster;
pub mod config;
pub mod consumer;
pub mod controller;
pub mod group;
pub mod inspect;
pub mod message;
pub mod ops;
pub mod plain_acl;
pub mod pull;
pub mod stats;
pub mod topic;

use std::time::Duration;

use tracing::debug;
use vostok_remoting::{BoxFuture, RemotingClient, RemotingCommand};

use crate::api;
use crate::error::{ClientError, Result};
use crate::instance::ClientConfig;

/// Connections to the name servers and brokers of one cluster, for admin requests.
pub struct AdminClient {
    remoting: RemotingClient,
    namesrv: Vec<String>,
    timeout: Duration,
    config: ClientConfig,
}

impl AdminClient {
    /// An admin client for `config.namesrv_addr`; its remoting settings, RPC hook and
    /// `mq_client_api_timeout` apply to every call.
    pub fn new(config: &ClientConfig) -> Result<AdminClient> {
        if config.namesrv_addr.is_empty() {
            return Err(ClientError::NoNameServer);
        }
        let remoting = RemotingClient::new(config.remoting.clone(), None);
        config.install_hooks(&remoting);
        Ok(AdminClient {
            remoting,
            namesrv: config.namesrv_addr.clone(),
            timeout: config.mq_client_api_timeout,
            config: config.clone(),
        })
    }

    /// The config this client was made with: tools that also produce or consume
    /// (`sendMessage`, `checkMsgSendRT`) build their clients from it.
    pub fn client_config(&self) -> &ClientConfig {
        &self.config
    }

    /// The name servers, in the order they are tried.
    pub fn namesrv_addrs(&self) -> &[String] {
        &self.namesrv
    }

    /// Closes the connections.
    pub async fn shutdown(&self) {
        self.remoting.shutdown().await;
    }

    /// Sends `request` to `addr` and requires SUCCESS.
    async fn call(&self, addr: &str, request: RemotingCommand) -> Result<RemotingCommand> {
        let response = api::invoke(&self.remoting, addr, request, self.timeout).await?;
        api::expect_success(addr, response)
    }

    /// Runs `call` against the name servers in order until one answers: a name server
    /// that cannot be reached is skipped, any answer (an error code included) is final.
    async fn invoke_namesrv<T, F>(&self, call: F) -> Result<T>
    where
        F: for<'a> Fn(&'a AdminClient, &'a str) -> BoxFuture<'a, Result<T>>,
    {
        let (last, others) = self.namesrv.split_last().ok_or(ClientError::NoNameServer)?;
        for addr in others {
            match call(self, addr).await {
                Err(e) if e.is_transport() => {
                    debug!(namesrv = %addr, error = %e, "name server unreachable; trying the next one");
                }
                answered => return answered,
            }
        }
        // The last one's failure is the caller's to report.
        call(self, last).await
    }
}
