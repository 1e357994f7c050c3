//! Configuration at run time: a broker's and a name server's `.properties` (read and
//! change), the name servers' KV config, and the write permission the name servers
//! grant a broker name.

use vostok_remoting::protocol::header::{
    AddWritePermOfBrokerResponseHeader, BrokerPermRequestHeader, GetKvConfigResponseHeader,
    KvConfigRequestHeader, PutKvConfigRequestHeader, WipeWritePermOfBrokerResponseHeader,
};
use vostok_remoting::protocol::{request_code, response_code};
use vostok_remoting::support::properties;
use vostok_remoting::RemotingCommand;

use super::AdminClient;
use crate::api;
use crate::error::Result;

/// A `.properties` body as key/value pairs, in the order written.
fn pairs(body: &[u8]) -> Vec<(String, String)> {
    properties::parse(&String::from_utf8_lossy(body))
}

impl AdminClient {
    /// GET_BROKER_CONFIG (`getBrokerConfig`): the broker's effective configuration.
    pub async fn get_broker_config(&self, broker_addr: &str) -> Result<Vec<(String, String)>> {
        let request = RemotingCommand::request(request_code::GET_BROKER_CONFIG);
        let response = self.call(broker_addr, request).await?;
        Ok(pairs(&response.body))
    }

    /// UPDATE_BROKER_CONFIG (`updateBrokerConfig`): the broker applies the keys it can
    /// change at run time and keeps them across restarts.
    pub async fn update_broker_config(
        &self,
        broker_addr: &str,
        changes: &[(String, String)],
    ) -> Result<()> {
        let request = RemotingCommand::request(request_code::UPDATE_BROKER_CONFIG)
            .with_body(properties::render(changes).into_bytes());
        self.call(broker_addr, request).await.map(drop)
    }

    /// GET_NAMESRV_CONFIG (`getNameServerConfig`) of one name server.
    pub async fn get_namesrv_config(&self, namesrv_addr: &str) -> Result<Vec<(String, String)>> {
        let request = RemotingCommand::request(request_code::GET_NAMESRV_CONFIG);
        let response = self.call(namesrv_addr, request).await?;
        Ok(pairs(&response.body))
    }

    /// UPDATE_NAMESRV_CONFIG (`updateNameServerConfig`) of one name server.
    pub async fn update_namesrv_config(
        &self,
        namesrv_addr: &str,
        changes: &[(String, String)],
    ) -> Result<()> {
        let request = RemotingCommand::request(request_code::UPDATE_NAMESRV_CONFIG)
            .with_body(properties::render(changes).into_bytes());
        self.call(namesrv_addr, request).await.map(drop)
    }

    /// PUT_KV_CONFIG (`createAndUpdateKvConfig`) on every name server, in order.
    pub async fn create_and_update_kv_config(
        &self,
        namespace: &str,
        key: &str,
        value: &str,
    ) -> Result<()> {
        let header = PutKvConfigRequestHeader {
            namespace: namespace.to_owned(),
            key: key.to_owned(),
            value: value.to_owned(),
        };
        for addr in &self.namesrv {
            let request =
                RemotingCommand::request_with_header(request_code::PUT_KV_CONFIG, &header);
            self.call(addr, request).await?;
        }
        Ok(())
    }

    /// GET_KV_CONFIG (`getKVConfig`) from the first name server that answers: `None`
    /// when the key is not there (QUERY_NOT_FOUND).
    pub async fn get_kv_config(&self, namespace: &str, key: &str) -> Result<Option<String>> {
        let header = KvConfigRequestHeader {
            namespace: namespace.to_owned(),
            key: key.to_owned(),
        };
        self.invoke_namesrv(|admin, addr| {
            let request =
                RemotingCommand::request_with_header(request_code::GET_KV_CONFIG, &header);
            Box::pin(async move {
                match admin.call(addr, request).await {
                    Ok(response) => {
                        let h: GetKvConfigResponseHeader = api::decode_header(addr, &response)?;
                        Ok(h.value)
                    }
                    Err(e) if e.response_code() == Some(response_code::QUERY_NOT_FOUND) => Ok(None),
                    Err(e) => Err(e),
                }
            })
        })
        .await
    }

    /// GET_CONTROLLER_CONFIG (`getControllerConfig`) of one controller.
    pub async fn get_controller_config(&self, addr: &str) -> Result<Vec<(String, String)>> {
        let request = RemotingCommand::request(request_code::GET_CONTROLLER_CONFIG);
        let response = self.call(addr, request).await?;
        Ok(pairs(&response.body))
    }

    /// UPDATE_CONTROLLER_CONFIG (`updateControllerConfig`) of one controller.
    pub async fn update_controller_config(
        &self,
        addr: &str,
        changes: &[(String, String)],
    ) -> Result<()> {
        let request = RemotingCommand::request(request_code::UPDATE_CONTROLLER_CONFIG)
            .with_body(properties::render(changes).into_bytes());
        self.call(addr, request).await.map(drop)
    }

    /// DELETE_KV_CONFIG (`deleteKvConfig`) on every name server, in order.
    pub async fn delete_kv_config(&self, namespace: &str, key: &str) -> Result<()> {
        let header = KvConfigRequestHeader {
            namespace: namespace.to_owned(),
            key: key.to_owned(),
        };
        for addr in &self.namesrv {
            let request =
                RemotingCommand::request_with_header(request_code::DELETE_KV_CONFIG, &header);
            self.call(addr, request).await?;
        }
        Ok(())
    }

    /// WIPE_WRITE_PERM_OF_BROKER (`wipeWritePermOfBroker`) on one name server: how many
    /// of the broker name's topics lost write permission there.
    pub async fn wipe_write_perm_of_broker(
        &self,
        namesrv_addr: &str,
        broker_name: &str,
    ) -> Result<i32> {
        let header = BrokerPermRequestHeader {
            broker_name: broker_name.to_owned(),
        };
        let request =
            RemotingCommand::request_with_header(request_code::WIPE_WRITE_PERM_OF_BROKER, &header);
        let response = self.call(namesrv_addr, request).await?;
        let h: WipeWritePermOfBrokerResponseHeader = api::decode_header(namesrv_addr, &response)?;
        Ok(h.wipe_topic_count)
    }

    /// ADD_WRITE_PERM_OF_BROKER (`addWritePermOfBroker`) on one name server: how many
    /// of the broker name's topics regained write permission there.
    pub async fn add_write_perm_of_broker(
        &self,
        namesrv_addr: &str,
        broker_name: &str,
    ) -> Result<i32> {
        let header = BrokerPermRequestHeader {
            broker_name: broker_name.to_owned(),
        };
        let request =
            RemotingCommand::request_with_header(request_code::ADD_WRITE_PERM_OF_BROKER, &header);
        let response = self.call(namesrv_addr, request).await?;
        let h: AddWritePermOfBrokerResponseHeader = api::decode_header(namesrv_addr, &response)?;
        Ok(h.add_topic_count)
    }
}
