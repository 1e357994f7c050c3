//! The RocketMQ protocol vocabulary: codes, typed headers, JSON bodies, route data,
//! message records and their encodings. Nothing here does I/O.

pub mod body;
pub mod filter;
pub mod header;
pub mod json;
pub mod message;
pub mod pop;
pub mod request_code;
pub mod response_code;
pub mod route;
pub mod topic;
pub mod version;
