//! Annotation keys of the wire contract, each with its typed payload where it has one.
//!
//! - [`RETRY_ANNOTATION`] (people, on a `Failed` `NetworkConfigRevision`) and
//!   [`RETRIED_ANNOTATION`] (configurator, the retry it acted on).
//! - [`NODE_RETRY_ANNOTATION`] (configurator or people, on a `NodeNetworkConfig`): one more try.
//! - [`DISPATCH_ANNOTATION`] (configurator, on a `NodeNetworkConfig`): a [`Dispatch`] record.
//! - [`UNDO_ANNOTATION`] (configurator, on a `NetworkConfigRevision`): the sequence an undo
//!   gave it.
//! - [`UNRESPONSIVE_ANNOTATION`] (configurator, on a `NodeNetworkConfig`): a time, see
//!   [`format_time`] and [`parse_time`].

use std::collections::BTreeMap;

use jiff::Timestamp;
use serde::{Deserialize, Serialize};

/// Annotation on a `Failed` `NetworkConfigRevision` that asks the configurator to retry it: the
/// configurator clears `Failed`, raises `spec.sequence` so it is the target again, and removes the
/// annotation. Any value works; `kubectl netrollout retry <rev>` sets the time.
pub const RETRY_ANNOTATION: &str = "netrollout.io/retry";
/// Annotation on a `NodeNetworkConfig` that asks its agent to try the current `spec.revision`
/// once more although it failed on this node. Each new value is one retry; the agent remembers
/// the last value it acted on in its state directory.
pub const NODE_RETRY_ANNOTATION: &str = "netrollout.io/retry";
/// Annotation the configurator leaves on a revision a person retried (the retry's value); each
/// later dispatch of it asks the node's agent for one more try ([`NODE_RETRY_ANNOTATION`]).
pub const RETRIED_ANNOTATION: &str = "netrollout.io/retried";
/// Annotation the configurator sets on a revision it raised because the inputs came back to its
/// content while it was `Succeeded` (an undo to known-good): the sequence it raised it to. While
/// that is still its `spec.sequence`, its rollout is an undo, which the maintenance schedule
/// never holds; any other raise removes it.
pub const UNDO_ANNOTATION: &str = "netrollout.io/undo-of-sequence";
/// Annotation on a `NodeNetworkConfig` where the configurator records its dispatch (JSON, a
/// [`Dispatch`]) so that a new leader sees it.
pub const DISPATCH_ANNOTATION: &str = "netrollout.io/dispatch";
/// Annotation on a `NodeNetworkConfig`: when the planner last marked the node Unresponsive
/// ([`format_time`]). Cleared by the next dispatch.
pub const UNRESPONSIVE_ANNOTATION: &str = "netrollout.io/unresponsive-since";

/// The payload of [`DISPATCH_ANNOTATION`]: which revision the configurator dispatched to the
/// node, when, and what the node had before. Times are RFC 3339 with milliseconds.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct Dispatch {
    /// The revision dispatched.
    pub revision: String,
    /// When (configurator clock).
    #[serde(with = "time_text")]
    pub at: Timestamp,
    /// The spec revision the node had before.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub previous: Option<String>,
    /// When the configurator first saw the agent applying it.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        with = "opt_time_text"
    )]
    pub picked_up_at: Option<Timestamp>,
    /// The revision's `spec.sequence` when it was dispatched: the targeting the dispatch
    /// belongs to (a raise of the sequence starts a new one). Absent in records written before
    /// it was recorded: such a dispatch belongs to no current wave of the fleet guard.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sequence: Option<i64>,
    /// When the configurator first saw the agent report Provisioned for it (kept only with
    /// `--bake-time`: the node's bake runs from here).
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        with = "opt_time_text"
    )]
    pub settled_at: Option<Timestamp>,
}

impl Dispatch {
    /// The record in an object's annotations, or `None` when there is none or it does not parse
    /// (a record with an unreadable time counts as no record: the planner adopts the spec afresh).
    pub fn from_annotations(annotations: Option<&BTreeMap<String, String>>) -> Option<Self> {
        let text = annotations?.get(DISPATCH_ANNOTATION)?;
        serde_json::from_str(text).ok()
    }

    /// The annotation value.
    pub fn to_annotation(&self) -> Result<String, serde_json::Error> {
        serde_json::to_string(self)
    }
}

/// A time as the annotations carry it: RFC 3339, UTC, with milliseconds
/// (`2023-11-14T22:13:20.123Z`).
pub fn format_time(t: Timestamp) -> String {
    format!("{t:.3}")
}

/// Parses [`format_time`] output (any RFC 3339 time); `None` when it is no time.
pub fn parse_time(s: &str) -> Option<Timestamp> {
    s.parse().ok()
}

/// The time in [`UNRESPONSIVE_ANNOTATION`] of an object's annotations, if any and readable.
pub fn unresponsive_since(annotations: Option<&BTreeMap<String, String>>) -> Option<Timestamp> {
    parse_time(annotations?.get(UNRESPONSIVE_ANNOTATION)?)
}

mod time_text {
    use jiff::Timestamp;
    use serde::{Deserialize, Deserializer, Serializer};

    pub(super) fn serialize<S: Serializer>(t: &Timestamp, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&super::format_time(*t))
    }

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Timestamp, D::Error> {
        let text = String::deserialize(d)?;
        super::parse_time(&text)
            .ok_or_else(|| serde::de::Error::custom(format!("{text:?} is no RFC 3339 time")))
    }
}

mod opt_time_text {
    use jiff::Timestamp;
    use serde::{Deserialize, Deserializer, Serializer};

    pub(super) fn serialize<S: Serializer>(t: &Option<Timestamp>, s: S) -> Result<S::Ok, S::Error> {
        match t {
            Some(t) => super::time_text::serialize(t, s),
            None => s.serialize_none(),
        }
    }

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(
        d: D,
    ) -> Result<Option<Timestamp>, D::Error> {
        match Option::<String>::deserialize(d)? {
            None => Ok(None),
            Some(text) => super::parse_time(&text)
                .map(Some)
                .ok_or_else(|| serde::de::Error::custom(format!("{text:?} is no RFC 3339 time"))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(n: i64) -> Timestamp {
        Timestamp::from_millisecond(n).unwrap()
    }

    #[test]
    fn a_dispatch_record_survives_the_round_trip_through_its_annotation() {
        let d = Dispatch {
            revision: "ncr-1".into(),
            at: ms(1_700_000_000_123),
            previous: Some("ncr-0".into()),
            picked_up_at: Some(ms(1_700_000_001_000)),
            sequence: Some(7),
            settled_at: None,
        };
        let json = d.to_annotation().unwrap();
        assert_eq!(
            json,
            r#"{"revision":"ncr-1","at":"2023-11-14T22:13:20.123Z","previous":"ncr-0","pickedUpAt":"2023-11-14T22:13:21.000Z","sequence":7}"#
        );
        let annotations = BTreeMap::from([(DISPATCH_ANNOTATION.to_string(), json)]);
        assert_eq!(Dispatch::from_annotations(Some(&annotations)), Some(d));
        // A record written before the sequence was recorded still reads, without one.
        let old = BTreeMap::from([(
            DISPATCH_ANNOTATION.to_string(),
            r#"{"revision":"ncr-1","at":"2023-11-14T22:13:20.123Z"}"#.to_string(),
        )]);
        assert_eq!(
            Dispatch::from_annotations(Some(&old)).map(|d| d.sequence),
            Some(None)
        );
    }

    #[test]
    fn a_record_with_an_unreadable_time_counts_as_no_record() {
        let annotations = BTreeMap::from([(
            DISPATCH_ANNOTATION.to_string(),
            r#"{"revision":"ncr-1","at":"yesterday"}"#.to_string(),
        )]);
        assert_eq!(Dispatch::from_annotations(Some(&annotations)), None);
        assert_eq!(Dispatch::from_annotations(None), None);
    }

    #[test]
    fn the_unresponsive_time_reads_back() {
        let annotations = BTreeMap::from([(
            UNRESPONSIVE_ANNOTATION.to_string(),
            format_time(ms(1_700_000_000_123)),
        )]);
        assert_eq!(
            unresponsive_since(Some(&annotations)),
            Some(ms(1_700_000_000_123))
        );
        let bad = BTreeMap::from([(UNRESPONSIVE_ANNOTATION.to_string(), "soon".to_string())]);
        assert_eq!(unresponsive_since(Some(&bad)), None);
    }
}
