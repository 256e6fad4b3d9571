//! The netrollout lab API server: an in-memory server that speaks enough of the Kubernetes
//! REST API for `kubectl` (v1.32) and `kube::Client` (watchers, reflectors, controllers,
//! leader election) to work against it unchanged. It is a test and lab tool; production
//! always talks to a real cluster.
//!
//! ```no_run
//! # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
//! use netrollout_lab_apiserver::{Config, LabServer};
//! let server = LabServer::start(Config::default()).await?;
//! let client = server.client()?;
//! server.faults().set_latency(std::time::Duration::from_millis(20));
//! # drop(client);
//! server.shutdown().await?;
//! # Ok(()) }
//! ```
//!
//! Layout:
//! - [`server`]: [`LabServer`] and its [`Config`] (start, kubeconfig, client, shutdown);
//!   `listener`: HTTPS (self-signed) and plain HTTP on one port.
//! - `front`: authentication, authorization and routing of every HTTP request, discovery and
//!   `/lab/faults` endpoints; `app`: what handlers share (state, request, responses).
//! - [`auth`]: bearer tokens per [`Identity`]; `rbac`: the RBAC authorizer over stored roles.
//! - `verbs`: get, list, watch, create, update, patch, delete, deletecollection; admission.
//! - `store`: objects, the global resourceVersion, event window, the object size limit,
//!   finalizers, garbage collection (of dependents and of objects whose owners are gone);
//!   `stored`: one object version held as its JSON bytes; `event`: one change as retained and
//!   sent.
//! - `watchers`: the watcher registry and what each watcher may hold before it is dropped;
//!   `watch`: the streaming watch response with bookmarks.
//! - [`resources`]: built-in kinds and kinds defined by CRDs.
//! - `admission`: CEL admission (CRD `x-kubernetes-validations`, ValidatingAdmissionPolicies);
//!   the CRD `openAPIV3Schema` and CEL-rule checks themselves are `netrollout_crdcheck`'s,
//!   shared with the kubectl plugin; `builtin`: typed checks of built-in kinds.
//! - `patch`: merge, JSON, strategic-merge and apply patches; `managed`: field ownership
//!   (`managedFields`) and server-side apply conflicts.
//! - `discovery`: discovery documents and OpenAPI v3; `table`: Table responses and JSONPath.
//! - `selector`: label and field selectors; `object`: JSON object helpers; `convert`: views
//!   of stored objects (apiVersion, the two Event APIs sharing one storage).
//! - [`faults`]: fault injection; `persist`: optional persistence to a file; `protobuf`: the
//!   protobuf bodies of `kubectl create namespace|configmap`.
//! - [`error`]: [`Error`] and the `Status`-rendering [`ApiError`].
#![forbid(unsafe_code)]

mod admission;
mod app;
pub mod auth;
mod builtin;
mod convert;
mod discovery;
pub mod error;
mod event;
pub mod faults;
mod front;
mod listener;
mod managed;
mod object;
mod patch;
mod persist;
mod protobuf;
mod rbac;
pub mod resources;
mod selector;
pub mod server;
mod store;
mod stored;
mod table;
mod verbs;
mod watch;
mod watchers;

pub use auth::Identity;
pub use error::{ApiError, Error, Result};
pub use faults::{ErrorRule, FaultConfig, Faults, Outage};
pub use server::{Config, LabServer};
