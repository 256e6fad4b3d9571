//! HTTP: the server and its listener, the front every request passes (authentication,
//! authorization, routing, injected faults), the verbs, and the response shapes (watch streams,
//! Tables, discovery and OpenAPI, protobuf bodies). The top layer: it calls [`crate::write`],
//! [`crate::authz`] and [`crate::storage`]; none of them calls back.

pub(crate) mod app;
pub(crate) mod discovery;
pub(crate) mod front;
pub(crate) mod listener;
pub(crate) mod protobuf;
pub mod server;
pub(crate) mod table;
pub(crate) mod verbs;
pub(crate) mod watch;
