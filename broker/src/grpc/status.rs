//! The `Status` every response carries (docs/grpc.md#status-codes): builders, and the
//! mapping from the broker's remoting response codes (Apache's `ResponseBuilder`).

use vostok_remoting::protocol::response_code;

use super::proto::{Code, Status};
use crate::ops::stored::Ack;
use crate::ops::{Refusal, Refused};

/// A status with `code` and `message`.
pub(crate) fn status(code: Code, message: impl Into<String>) -> Status {
    Status {
        code: code as i32,
        message: message.into(),
    }
}

/// `OK` with its name as the message, as Apache answers.
pub(crate) fn ok() -> Status {
    status(Code::Ok, "OK")
}

/// The status for a remoting response code and remark. Apache maps SUCCESS, SYSTEM_BUSY,
/// REQUEST_CODE_NOT_SUPPORTED and SUBSCRIPTION_GROUP_NOT_EXIST and answers
/// INTERNAL_SERVER_ERROR for the rest; Vostok also names the codes whose meaning a
/// client can act on (a missing topic, a permission, a bad request, a full poll).
pub(crate) fn from_remoting(code: i32, remark: &str) -> Status {
    let mapped = match code {
        response_code::SUCCESS => Code::Ok,
        response_code::SYSTEM_BUSY | response_code::POLLING_FULL => Code::TooManyRequests,
        response_code::REQUEST_CODE_NOT_SUPPORTED => Code::NotImplemented,
        response_code::SUBSCRIPTION_GROUP_NOT_EXIST => Code::ConsumerGroupNotFound,
        response_code::TOPIC_NOT_EXIST => Code::TopicNotFound,
        response_code::NO_PERMISSION => Code::Forbidden,
        response_code::INVALID_PARAMETER | response_code::MESSAGE_ILLEGAL => Code::BadRequest,
        response_code::FLUSH_DISK_TIMEOUT => Code::MasterPersistenceTimeout,
        response_code::FLUSH_SLAVE_TIMEOUT => Code::SlavePersistenceTimeout,
        response_code::SLAVE_NOT_AVAILABLE => Code::HaNotAvailable,
        response_code::NO_MESSAGE => Code::InvalidReceiptHandle,
        _ => Code::InternalServerError,
    };
    let message = if remark.is_empty() {
        code.to_string()
    } else {
        remark.to_owned()
    };
    status(mapped, message)
}

/// The status for an operation's refusal, as [`from_remoting`] maps the RocketMQ code
/// the remoting front end answers for it.
pub(crate) fn from_refusal(refusal: Refusal) -> Status {
    let code = match refusal.kind {
        Refused::Busy => Code::TooManyRequests,
        Refused::NoPermission => Code::Forbidden,
        Refused::InvalidParameter | Refused::MessageIllegal => Code::BadRequest,
        Refused::TopicNotExist => Code::TopicNotFound,
        Refused::GroupNotExist => Code::ConsumerGroupNotFound,
        Refused::NotOnline => Code::NotFound,
        Refused::OffsetNotFound => Code::OffsetNotFound,
        Refused::NotMaster => Code::HaNotAvailable,
        Refused::NotAvailable | Refused::SystemError => Code::InternalServerError,
    };
    status(code, refusal.remark)
}

/// The status of a stored send that the broker could not flush or replicate as told.
pub(crate) fn from_ack(ack: Ack) -> Status {
    match ack {
        Ack::Stored => ok(),
        Ack::FlushDiskTimeout => status(Code::MasterPersistenceTimeout, "FLUSH_DISK_TIMEOUT"),
        Ack::FlushSlaveTimeout => status(Code::SlavePersistenceTimeout, "FLUSH_SLAVE_TIMEOUT"),
        Ack::SlaveNotAvailable => status(Code::HaNotAvailable, "SLAVE_NOT_AVAILABLE"),
    }
}

/// The code of a status, `None` for a number the protocol does not name.
#[cfg(test)]
pub(crate) fn code_of(status: &Status) -> Option<Code> {
    Code::try_from(status.code).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn remoting_codes_map_as_clients_expect() {
        assert_eq!(
            code_of(&from_remoting(response_code::SUCCESS, "")),
            Some(Code::Ok)
        );
        assert_eq!(
            code_of(&from_remoting(response_code::SYSTEM_BUSY, "busy")),
            Some(Code::TooManyRequests)
        );
        assert_eq!(
            code_of(&from_remoting(
                response_code::SUBSCRIPTION_GROUP_NOT_EXIST,
                "x"
            )),
            Some(Code::ConsumerGroupNotFound)
        );
        assert_eq!(
            code_of(&from_remoting(response_code::SYSTEM_ERROR, "x")),
            Some(Code::InternalServerError)
        );
        assert_eq!(from_remoting(response_code::SYSTEM_ERROR, "").message, "1");
        assert_eq!(ok().code, 20000);
    }
}
