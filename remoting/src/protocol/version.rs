//! `MQVersion.Version` ordinals that change behaviour (docs/wire.md#version-ordinals).

/// V5_3_3: stamped on every command Vostok creates. Java clients record the heartbeat
/// response's version as the broker version, and name servers send standard JSON to
/// callers at or above [`V4_9_4`].
pub const CURRENT_VERSION: i32 = V5_3_3;

pub const V3_0_11: i32 = 37;
pub const V3_4_9: i32 = 121;
pub const V4_0_0: i32 = 213;
pub const V4_1_0_SNAPSHOT: i32 = 232;
pub const V4_5_2: i32 = 317;
pub const V4_6_0: i32 = 333;
pub const V4_9_0: i32 = 393;
pub const V4_9_4: i32 = 401;
pub const V5_0_0: i32 = 413;
pub const V5_3_1: i32 = 475;
pub const V5_3_3: i32 = 479;
