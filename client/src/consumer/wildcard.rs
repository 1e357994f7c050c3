//! Routing keys and binding keys in the style of an AMQP topic exchange
//! (docs/amqp.md): the rules and the matcher are the broker's own, so a consumer that
//! filters on the client (against a broker without routing-key filters) selects
//! exactly what a broker would.
//!
//! A message's routing key is its `ROUTING_KEY` property
//! ([`Message::set_routing_key`](crate::message::Message::set_routing_key)), else its
//! tag. A binding key is dot-separated parts where `*` stands for exactly one part and
//! `#` for zero or more: `a.*` matches `a.b` but not `a` or `a.b.c`; `a.#` matches `a`,
//! `a.b` and `a.b.c`; `#` matches everything.

pub use vostok_remoting::protocol::filter::routing::{
    routing_key_of_properties, validate_routing_key, BindingKey, RoutingKeyError, ROUTING_KEY,
};
