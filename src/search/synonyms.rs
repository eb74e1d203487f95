//! Search synonyms: groups of words readers use for one thing ("OOM", "out of memory",
//! `OutOfMemoryError`, 爆显存, "sin memoria"). Wherever a member of a group occurs in a page, the
//! index also holds the group's token (`~oom`), and the page's script turns a member in a query
//! into that token, so any member finds every page that uses another. Members are matched as
//! sequences of terms ([`super::terms`]), so `out-of-memory`, `out of memory` and
//! `Out Of Memory` are one member, and a Chinese member is a run of bigrams.
//!
//! Every language's index carries the English members too: error messages and many technical
//! words stay in English in the Spanish and Chinese guides.

use serde::Serialize;

/// One group: its token (a term no text produces: it starts with `~`) and its members.
pub(crate) struct Group {
    pub(crate) token: &'static str,
    en: &'static [&'static str],
    es: &'static [&'static str],
    zh: &'static [&'static str],
}

/// The groups.
pub(crate) const GROUPS: &[Group] = &[
    Group {
        token: "~oom",
        en: &[
            "oom",
            "out of memory",
            "outofmemoryerror",
            "outofmemory",
            "memory error",
        ],
        es: &[
            "sin memoria",
            "memoria insuficiente",
            "falta de memoria",
            "falta memoria",
            "se queda sin memoria",
        ],
        zh: &[
            "显存不足",
            "爆显存",
            "显存爆",
            "显存溢出",
            "显存不够",
            "内存不足",
        ],
    },
    Group {
        token: "~vram",
        en: &["vram", "gpu memory", "video memory", "device memory"],
        es: &["memoria de la gpu", "memoria de gpu", "memoria de video"],
        zh: &["显存"],
    },
    Group {
        token: "~microbatch",
        en: &["micro batch", "microbatch", "batch size", "batchsize"],
        es: &[
            "microlote",
            "micro lote",
            "tamano de lote",
            "tamano del lote",
        ],
        zh: &["微批次", "微批量", "批大小"],
    },
    Group {
        token: "~accumulation",
        en: &["gradient accumulation", "grad accum", "accumulation steps"],
        es: &["acumulacion de gradientes", "acumulacion del gradiente"],
        zh: &["梯度累积", "梯度累加"],
    },
    Group {
        token: "~checkpointing",
        en: &[
            "gradient checkpointing",
            "activation checkpointing",
            "activation recomputation",
            "grad checkpoint",
        ],
        es: &["checkpointing de gradientes", "recalculo de activaciones"],
        zh: &["梯度检查点", "激活重计算", "激活检查点"],
    },
];

/// A group as the index's part 00 gives it to the script: its token and its members, each as
/// its terms.
#[derive(Serialize)]
pub(crate) struct IndexedGroup {
    pub(crate) token: &'static str,
    pub(crate) members: Vec<Vec<String>>,
}

/// The groups of `lang`, members cut into terms (English members in every language).
pub(crate) fn groups(lang: &str) -> Vec<IndexedGroup> {
    GROUPS
        .iter()
        .map(|g| {
            let own: &[&str] = match lang.split('-').next().unwrap_or(lang) {
                "es" => g.es,
                "zh" => g.zh,
                _ => &[],
            };
            let members =
                g.en.iter()
                    .chain(own)
                    .map(|m| {
                        let mut v = Vec::new();
                        super::terms(m, |t| v.push(t.to_string()));
                        v
                    })
                    .filter(|v| !v.is_empty())
                    .collect();
            IndexedGroup {
                token: g.token,
                members,
            }
        })
        .collect()
}

/// The most terms a member of `groups` has: how many recent terms [`Recent`] keeps.
fn longest(groups: &[IndexedGroup]) -> usize {
    (groups.iter().flat_map(|g| &g.members))
        .map(Vec::len)
        .max()
        .unwrap_or(0)
}

/// The last terms of a text, as many as the longest member has: fed one term at a time, it finds
/// members as they end, so a text's terms are never held all at once (a page can be huge).
pub(crate) struct Recent<'g> {
    groups: &'g [IndexedGroup],
    terms: std::collections::VecDeque<String>,
    keep: usize,
    /// The terms a member ends with: only these can complete one (most terms are looked up
    /// here and go no further).
    ends: rustc_hash::FxHashSet<&'g str>,
}

impl<'g> Recent<'g> {
    pub(crate) fn new(groups: &'g [IndexedGroup]) -> Recent<'g> {
        let keep = longest(groups);
        let ends = (groups.iter().flat_map(|g| &g.members))
            .filter_map(|m| m.last().map(String::as_str))
            .collect();
        Recent {
            groups,
            terms: std::collections::VecDeque::with_capacity(keep),
            keep,
            ends,
        }
    }

    /// Takes the text's next term; calls `found(token)` for each member that ends with it.
    pub(crate) fn push(&mut self, term: &str, mut found: impl FnMut(&'static str)) {
        if self.keep == 0 {
            return;
        }
        let mut slot = if self.terms.len() == self.keep {
            self.terms.pop_front().unwrap_or_default()
        } else {
            String::new()
        };
        slot.clear();
        slot.push_str(term);
        self.terms.push_back(slot);
        if !self.ends.contains(term) {
            return;
        }
        let n = self.terms.len();
        for g in self.groups {
            for m in &g.members {
                if m.len() <= n && self.terms.range(n - m.len()..).eq(m.iter()) {
                    found(g.token);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tokens(lang: &str, text: &str) -> Vec<&'static str> {
        let g = groups(lang);
        let mut recent = Recent::new(&g);
        let mut out = Vec::new();
        super::super::terms(text, |t| recent.push(t, |token| out.push(token)));
        out
    }

    #[test]
    fn members_match_as_term_sequences_in_every_spelling() {
        assert_eq!(tokens("en", "CUDA out-of-memory"), ["~oom"]);
        assert_eq!(tokens("en", "torch.OutOfMemoryError: CUDA"), ["~oom"]);
        assert_eq!(tokens("zh", "训练时爆显存了"), ["~oom", "~vram"]);
        assert_eq!(
            tokens("es", "la GPU se queda sin memoria"),
            ["~oom", "~oom"]
        );
        assert_eq!(tokens("es", "Tamaño de lote"), ["~microbatch"]);
        // Not a member: the words must be adjacent and whole.
        assert!(tokens("en", "out of the memory").is_empty());
        assert!(tokens("en", "boom").is_empty());
    }
}
