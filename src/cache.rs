//! A memo map shared between threads that holds at most a given number of bytes and empties itself
//! when full: builds render guide by guide, so what is reused arrives close together, and memory
//! must not grow with the size of the site.

use std::borrow::Borrow;
use std::collections::HashMap;
use std::hash::Hash;
use std::sync::{Mutex, PoisonError};

/// Values by key, with the bytes they hold counted against a limit.
#[derive(Debug)]
pub(crate) struct BoundedCache<K, V> {
    entries: Mutex<(HashMap<K, V>, usize)>,
    limit: usize,
}

impl<K: Hash + Eq, V: Clone> BoundedCache<K, V> {
    /// An empty cache holding at most `limit` bytes.
    pub(crate) fn new(limit: usize) -> Self {
        BoundedCache {
            entries: Mutex::new((HashMap::new(), 0)),
            limit,
        }
    }

    /// A copy of the value under `key`.
    pub(crate) fn get<Q>(&self, key: &Q) -> Option<V>
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ?Sized,
    {
        let entries = self.entries.lock().unwrap_or_else(PoisonError::into_inner);
        entries.0.get(key).cloned()
    }

    /// Stores `value` under `key`, counting `bytes` for it; empties the cache first if it would
    /// go over its limit.
    pub(crate) fn insert(&self, key: K, value: V, bytes: usize) {
        let mut entries = self.entries.lock().unwrap_or_else(PoisonError::into_inner);
        if entries.1 + bytes > self.limit {
            *entries = (HashMap::new(), 0);
        }
        entries.1 += bytes;
        entries.0.insert(key, value);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn empties_itself_when_full() {
        let cache = BoundedCache::new(10);
        cache.insert("a", 1, 6);
        assert_eq!(cache.get("a"), Some(1));
        cache.insert("b", 2, 6);
        assert_eq!(cache.get("a"), None, "a was dropped to make room");
        assert_eq!(cache.get("b"), Some(2));
    }
}
