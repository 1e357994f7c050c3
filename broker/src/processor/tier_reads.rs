//! Requests besides pulls that may read the tier (docs/tiered-storage.md#reads-and-the-hot-tail):
//! searches by time (`SEARCH_OFFSET_BY_TIMESTAMP`, `resetOffsetByTime`), store times for
//! lag (`consumerProgress`, consume and topic stats), queue entries (`queryCq`), and
//! lookups by key or offset. With the tier on they run on the tier's reader threads,
//! as cold pulls do, so that an object-store read they wait for (at most
//! `tieredStoreReadTimeout`, within the read budget) holds up none of the async
//! workers that serve the hot tail.

use std::sync::Arc;

use vostok_remoting::protocol::response_code;
use vostok_remoting::RemotingCommand;

use super::error;
use crate::state::Broker;

/// A request handler that may read the tier.
pub(super) type Handler = fn(&Broker, RemotingCommand) -> RemotingCommand;

/// `handler` on the tier's reader threads when the tier serves reads, here otherwise.
/// SYSTEM_BUSY when more than `tieredStoreMaxPendingLimit` reads wait, or the request
/// waited past `tieredStoreReadTimeout` for a reader: the tool asks again.
pub(super) async fn run(
    broker: &Arc<Broker>,
    request: RemotingCommand,
    handler: Handler,
) -> RemotingCommand {
    let store = &broker.storage.store;
    if !store.tier_serves_reads() {
        return handler(broker, request);
    }
    let b = Arc::clone(broker);
    // A handler may start tasks (a reset by time tells the group's consumers).
    let runtime = tokio::runtime::Handle::current();
    let answer = store
        .on_tier_readers(move || {
            let _entered = runtime.enter();
            handler(&b, request)
        })
        .await;
    answer.unwrap_or_else(|| {
        error(
            response_code::SYSTEM_BUSY,
            "the tiered store's readers are busy (over tieredStoreMaxPendingLimit, or waited \
             past tieredStoreReadTimeout); try again",
        )
    })
}
