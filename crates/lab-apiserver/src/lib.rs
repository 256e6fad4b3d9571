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
//! Layout (each folder calls only the ones below it, and the leaves):
//! - `http`: [`server`] ([`LabServer`] and its [`Config`]: start, kubeconfig, client,
//!   shutdown); `listener`: HTTPS (self-signed) and plain HTTP on one port; `front`:
//!   authentication, authorization and routing of every HTTP request, discovery and
//!   `/lab/faults` endpoints; `app`: what handlers share (state, request, responses); `verbs`:
//!   get, list, watch, create, update, patch, delete, deletecollection; `watch`: the streaming
//!   watch response with bookmarks; `discovery`: discovery documents and OpenAPI v3; `table`:
//!   Table responses and JSONPath; `protobuf`: the protobuf bodies of `kubectl create
//!   namespace|configmap`.
//! - `write`: `admission`: CEL admission (CRD `x-kubernetes-validations`,
//!   ValidatingAdmissionPolicies; the CRD `openAPIV3Schema` and CEL-rule checks themselves are
//!   `netrollout_crdcheck`'s, shared with the kubectl plugin); `builtin`: typed checks of
//!   built-in kinds; `patch`: merge, JSON, strategic-merge and apply patches; `managed`: field
//!   ownership (`managedFields`) and server-side apply conflicts.
//! - `authz`: [`auth`]: bearer tokens per [`Identity`]; `rbac`: the RBAC authorizer over stored
//!   roles.
//! - `storage`: the store (objects, the global resourceVersion, event window, the object size
//!   limit, finalizers, garbage collection of dependents and of objects whose owners are gone);
//!   `stored`: one object version held as its JSON bytes; `event`: one change as retained and
//!   sent; `watchers`: the watcher registry and what each watcher may hold before it is dropped;
//!   `persist`: optional persistence to a file; `convert`: views of stored objects (apiVersion,
//!   the two Event APIs sharing one storage).
//! - Leaves: [`resources`]: built-in kinds and kinds defined by CRDs; `selector`: label and
//!   field selectors; `object`: JSON object helpers; [`faults`]: fault injection; [`error`]:
//!   [`Error`] and the `Status`-rendering [`ApiError`].
#![forbid(unsafe_code)]

mod authz;
pub mod error;
pub mod faults;
mod http;
mod object;
pub mod resources;
mod selector;
mod storage;
mod write;

pub use authz::auth;
pub use http::server;

pub use auth::Identity;
pub use error::{ApiError, Error, Result};
pub use faults::{ErrorRule, FaultConfig, Faults, Outage};
pub use server::{Config, LabServer};
