//! The one place the name server reads the clock.
//!
//! Tokio's clock, converted to `std::time::Instant`: the same as `Instant::now()` in
//! production, and frozen or advanced by hand in tests that pause Tokio's time, so
//! registrations and the expiry sweep always agree on "now".

use std::time::Instant;

pub fn now() -> Instant {
    tokio::time::Instant::now().into_std()
}
