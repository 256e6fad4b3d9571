//! The `netrollout.io/v1alpha1` API.
