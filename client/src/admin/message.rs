//! Message lookups: through a broker's index (by key or unique key) and by commitlog
//! offset. Answers are commitlog records, decoded by the same codec as pulls.

use vostok_remoting::protocol::header::{QueryMessageRequestHeader, ViewMessageRequestHeader};
use vostok_remoting::protocol::message::MessageExt;
use vostok_remoting::protocol::{request_code, response_code};
use vostok_remoting::RemotingCommand;

use super::AdminClient;
use crate::api;
use crate::error::{ClientError, Result};

impl AdminClient {
    /// QUERY_MESSAGE (`queryMessage`) to one broker: the messages its index finds for
    /// the key (a `KEYS` entry, or the UNIQ_KEY with `unique_key_query`), none on
    /// QUERY_NOT_FOUND. The index is a hash: callers keep the messages whose keys
    /// match. Like a pull, the records are read up to the first that does not decode.
    pub async fn query_message(
        &self,
        broker_addr: &str,
        header: &QueryMessageRequestHeader,
    ) -> Result<Vec<MessageExt>> {
        let request = RemotingCommand::request_with_header(request_code::QUERY_MESSAGE, header);
        let response = api::invoke(&self.remoting, broker_addr, request, self.timeout).await?;
        match response.code {
            response_code::SUCCESS => Ok(MessageExt::decode_all(&response.body)),
            response_code::QUERY_NOT_FOUND => Ok(Vec::new()),
            code => Err(ClientError::broker(broker_addr, code, response.remark())),
        }
    }

    /// VIEW_MESSAGE_BY_ID (`viewMessage`): the record at commitlog offset
    /// `commit_log_offset` of the broker at `store_host` (both decoded from an offset
    /// message id).
    pub async fn view_message(
        &self,
        store_host: &str,
        commit_log_offset: i64,
    ) -> Result<MessageExt> {
        let header = ViewMessageRequestHeader {
            offset: commit_log_offset,
            topic: None,
        };
        let request =
            RemotingCommand::request_with_header(request_code::VIEW_MESSAGE_BY_ID, &header);
        let response = self.call(store_host, request).await?;
        Ok(MessageExt::decode(&response.body, false)?)
    }
}
