//! The objects of one type: the store's map by namespace and name.

use std::collections::HashMap;

use super::Id;
use crate::storage::stored::Stored;

/// The objects of one type, by namespace and then by name: a lookup hashes the two `&str`s it
/// is given (no key is built, no name compared byte by byte down a tree; at 10,000 objects of a
/// type the ordered map's lookups were 7 % of a write). Listings sort, as the API returns
/// objects in key order.
#[derive(Debug, Default)]
pub(super) struct Objects(HashMap<String, HashMap<String, Stored>>);

impl Objects {
    pub(super) fn get(&self, ns: &str, name: &str) -> Option<&Stored> {
        self.0.get(ns)?.get(name)
    }

    pub(super) fn insert(&mut self, ns: &str, name: &str, stored: Stored) {
        if let Some(names) = self.0.get_mut(ns) {
            match names.get_mut(name) {
                Some(slot) => *slot = stored,
                None => {
                    names.insert(name.to_string(), stored);
                }
            }
        } else {
            let names = HashMap::from([(name.to_string(), stored)]);
            self.0.insert(ns.to_string(), names);
        }
    }

    pub(super) fn remove(&mut self, ns: &str, name: &str) -> Option<Stored> {
        let names = self.0.get_mut(ns)?;
        let removed = names.remove(name);
        if names.is_empty() {
            self.0.remove(ns);
        }
        removed
    }

    pub(super) fn len(&self) -> usize {
        self.0.values().map(HashMap::len).sum()
    }

    /// The objects (of namespace `ns`, if given) sorted by namespace and name.
    pub(super) fn sorted<'a>(&'a self, ns: Option<&str>) -> Vec<(Id<'a>, &'a Stored)> {
        let mut out: Vec<(Id<'a>, &'a Stored)> = self
            .0
            .iter()
            .filter(|(n, _)| ns.is_none_or(|ns| n.as_str() == ns))
            .flat_map(|(ns, names)| {
                names
                    .iter()
                    .map(move |(n, o)| ((ns.as_str(), n.as_str()), o))
            })
            .collect();
        out.sort_unstable_by(|a, b| a.0.cmp(&b.0));
        out
    }
}
