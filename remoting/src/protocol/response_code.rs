//! Response codes (docs/wire.md#response-codes, `ResponseCode.java`). Codes 209–211 mean
//! different things in 4.x and 5.x; the 5.x names are used.

macro_rules! codes {
    ($($name:ident = $value:expr,)*) => {
        $(pub const $name: i32 = $value;)*

        /// The RocketMQ name of a response code, or `"UNKNOWN"`.
        pub fn name(code: i32) -> &'static str {
            match code {
                $($value => stringify!($name),)*
                _ => "UNKNOWN",
            }
        }
    };
}

codes! {
    SUCCESS = 0,
    SYSTEM_ERROR = 1,
    SYSTEM_BUSY = 2,
    REQUEST_CODE_NOT_SUPPORTED = 3,
    TRANSACTION_FAILED = 4,
    FLUSH_DISK_TIMEOUT = 10,
    SLAVE_NOT_AVAILABLE = 11,
    FLUSH_SLAVE_TIMEOUT = 12,
    MESSAGE_ILLEGAL = 13,
    SERVICE_NOT_AVAILABLE = 14,
    VERSION_NOT_SUPPORTED = 15,
    NO_PERMISSION = 16,
    TOPIC_NOT_EXIST = 17,
    TOPIC_EXIST_ALREADY = 18,
    PULL_NOT_FOUND = 19,
    PULL_RETRY_IMMEDIATELY = 20,
    PULL_OFFSET_MOVED = 21,
    QUERY_NOT_FOUND = 22,
    SUBSCRIPTION_PARSE_FAILED = 23,
    SUBSCRIPTION_NOT_EXIST = 24,
    SUBSCRIPTION_NOT_LATEST = 25,
    SUBSCRIPTION_GROUP_NOT_EXIST = 26,
    FILTER_DATA_NOT_EXIST = 27,
    FILTER_DATA_NOT_LATEST = 28,
    INVALID_PARAMETER = 29,
    TRANSACTION_SHOULD_COMMIT = 200,
    TRANSACTION_SHOULD_ROLLBACK = 201,
    TRANSACTION_STATE_UNKNOW = 202,
    TRANSACTION_STATE_GROUP_WRONG = 203,
    NO_BUYER_ID = 204,
    NOT_IN_CURRENT_UNIT = 205,
    CONSUMER_NOT_ONLINE = 206,
    CONSUME_MSG_TIMEOUT = 207,
    NO_MESSAGE = 208,
    POLLING_FULL = 209,
    POLLING_TIMEOUT = 210,
    BROKER_NOT_EXIST = 211,
    BROKER_DISPATCH_NOT_COMPLETE = 212,
    BROADCAST_CONSUMPTION = 213,
    FLOW_CONTROL = 215,
    NOT_LEADER_FOR_QUEUE = 501,
    ILLEGAL_OPERATION = 604,
    GO_AWAY = 1500,
}

/// True for codes that mean "the message was stored" on a send response.
pub fn is_stored(code: i32) -> bool {
    matches!(
        code,
        SUCCESS | FLUSH_DISK_TIMEOUT | FLUSH_SLAVE_TIMEOUT | SLAVE_NOT_AVAILABLE
    )
}
